"""Greenfield enrollment of the runbook's example worker reaches all four conditions True."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.enrollment_run import EnrollmentInput, EnrollmentResult
from models.gates import ApprovePlan
from models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker


async def wait_stage(handle: WorkflowHandle[Any, Any], prefix: str, timeout_s: float = 20) -> RunStatus:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await handle.query("status", result_type=RunStatus)
        if status.stage.startswith(prefix):
            return status
        assert asyncio.get_running_loop().time() < deadline, f"stuck at {status.stage}"
        await asyncio.sleep(0.1)


async def test_greenfield_reaches_all_conditions(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow("WorkerEnrollment",
                                             EnrollmentInput(contract=greenfield.contract(), condition_budget_s=20),
                                             id="enroll/forecasting/forecasting-us-gf", task_queue=queue,
                                             result_type=EnrollmentResult)
        status = await wait_stage(handle, "gate:approve_plan")
        assert status.plan is not None
        leave = [s for s in status.plan.steps if s.action == "leave"]
        assert [s.name for s in leave] == ["victoria-metrics-operator"]
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        result = await handle.result()
    assert {k: v.status for k, v in result.conditions.items()} == {
        "Registered": "True", "Connected": "True", "WorkerConfigured": "True", "DispatchReady": "True"}
    enrollment = greenfield.hub.get("trainy.ai", "bootstrapenrollments", "forecasting-us", "forecasting")
    assert enrollment["status"]["usedAt"]
    assert not greenfield.hub.list("", "secrets", "forecasting")
