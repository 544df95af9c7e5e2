"""Decommission writes nothing before its plan is approved, and reset applies exactly the approved dry run (or
nothing, when ``konduktor worker reset --dry-run`` no longer lists what was approved)."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import DecommissionInput, DecommissionResult
from tenantflow.models.gates import RejectPlan
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, wait_stage

LATE = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "late-agent", "namespace": "trainy-system", "labels": {"trainy.ai/installed-by": "konduktor"}},
}


async def enrolled_then_decommission(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, DecommissionResult]:
    await (await start_approved(client, queue, lab.contract(), condition_budget_s=20)).result()
    return await client.start_workflow(
        "WorkerDecommission",
        DecommissionInput(contract=lab.contract()),
        id=f"decommission/forecasting/{uuid.uuid4().hex[:6]}",
        task_queue=queue,
        result_type=DecommissionResult,
    )


async def test_rejected_decommission_writes_nothing(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        status = await wait_stage(dec, "gate:approve_plan")
        assert status.plan is not None
        assert {(s.layer, s.kind, s.action) for s in status.plan.steps if s.layer == "hub"} == {
            ("hub", "WorkerCluster", "delete"),
            ("hub", "BootstrapEnrollment", "delete"),
        }
        before = greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
        await dec.execute_update("reject_plan", RejectPlan(reason="not today"))
        result = await dec.result()
    assert result.status == "rejected" and not result.removed
    after = greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert after["spec"] == before["spec"] and after["metadata"].get("annotations") == before["metadata"].get(
        "annotations"
    ), "the WorkerCluster was neither cordoned nor removed"


async def test_reset_refuses_when_the_dry_run_changed_since_approval(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        status = await wait_stage(dec, "gate:approve_plan")
        greenfield.worker.create(LATE, "trainy-system")
        await dec.execute_update("approve_plan", {"plan_hash": status.plan_hash})
        kind, status = await failure(dec)
    assert kind == "ResetPlanChanged"
    assert greenfield.worker.get("", "serviceaccounts", "late-agent", "trainy-system")
    assert greenfield.worker.list("apps", "deployments", "trainy-system"), "nothing was reset"
    [failed] = [s for s in status.steps if s.name == "worker.reset_approved"]
    assert failed.state == "failed"
