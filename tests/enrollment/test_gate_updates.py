"""Every gate of a brownfield enrollment and of a decommission answered with the plain ``temporal`` CLI by its name."""

from __future__ import annotations

import json
import uuid

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import DecommissionInput, DecommissionResult, EnrollmentInput
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.decommission import WorkerDecommissionWorkflow
from tenantflow.workflows.enrollment import BROWNFIELD_GATES
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage
from tests.starter.test_temporal_cli import temporal


async def answer(api: TenantflowClient, workflow_id: str, gate: str, payload: dict[str, str]) -> str:
    return await temporal(
        api,
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        workflow_id,
        "--name",
        gate,
        "--input",
        json.dumps(payload),
    )


async def test_every_enrollment_and_decommission_gate_answers_by_name(
    dev_env: WorkflowEnvironment, brownfield: Lab
) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        api = TenantflowClient(client, queue)
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=brownfield.contract(brownfield=True), condition_budget_s=20),
            id=f"enroll/forecasting/cli-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await answer(api, handle.id, "approve_plan", {"plan_hash": status.plan_hash or ""})
        for gate in BROWNFIELD_GATES:
            status = await wait_stage(handle, f"gate:{gate}", timeout_s=60)
            assert any(f"--name {gate} " in how for g in status.gates for how in g.how_to_answer)
            assert f"{gate} answered by ops" in await answer(api, handle.id, gate, {"approver": "ops"})
        assert (await handle.result())["status"] == "completed"
        dec = await client.start_workflow(
            "WorkerDecommission",
            DecommissionInput(contract=brownfield.contract()),
            id=f"decommission/forecasting/cli-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=DecommissionResult,
        )
        status = await wait_stage(dec, "gate:approve_plan")
        assert WorkerDecommissionWorkflow.YES_NO_GATES == ()
        await answer(api, dec.id, "approve_plan", {"plan_hash": status.plan_hash or ""})
        assert (await dec.result()).status == "completed"
