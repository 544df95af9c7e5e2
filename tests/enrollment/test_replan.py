"""Enrollment applies the plan it had approved: a namespace made by hand after approval reopens ``approve_plan``."""

from __future__ import annotations

import uuid

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import RejectPlan
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage

BY_HAND = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "trainy-byoc-system"}}


async def test_a_changed_worker_reopens_the_approval(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract()),
            id=f"enroll/forecasting/rp-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        first = await wait_stage(handle, "gate:approve_plan")
        greenfield.worker.create(BY_HAND)
        await handle.execute_update("approve_plan", {"plan_hash": first.plan_hash})
        again = await wait_stage(handle, "gate:approve_plan")
        while again.plan_hash == first.plan_hash:
            again = await wait_stage(handle, "gate:approve_plan")
        assert "~ worker Namespace trainy-byoc-system: create -> unchanged" in again.gates[0].description
        assert not greenfield.hub.list("trainy.ai", "bootstrapenrollments", "forecasting"), "nothing written yet"
        await handle.execute_update("reject_plan", RejectPlan(reason="who made that namespace?"))
        result = await handle.result()
    assert result.status == "rejected" and result.plan_hash == again.plan_hash
