"""Greenfield enrollment of the runbook's example worker reaches all four conditions True."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage


async def test_greenfield_reaches_all_conditions(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract(), condition_budget_s=20),
            id="enroll/forecasting/forecasting-us-gf",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        assert status.plan is not None
        leave = [s for s in status.plan.steps if s.action == "leave"]
        assert [s.name for s in leave] == ["victoria-metrics-operator"]
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        result = await handle.result()
    assert {k: v.status for k, v in result.conditions.items()} == {
        "Registered": "True",
        "Connected": "True",
        "WorkerConfigured": "True",
        "DispatchReady": "True",
        "ObservabilityIngestHealthy": "Unknown",
    }, "NoTrafficYet does not block the four conditions"
    [traffic] = [f for f in result.findings if f.check == "condition.ObservabilityIngestHealthy"]
    assert traffic.ok and "NoTrafficYet" in traffic.message and "canary" in traffic.fix
    enrollment = greenfield.hub.get("trainy.ai", "bootstrapenrollments", "forecasting-us", "forecasting")
    assert enrollment["status"]["usedAt"]
    assert not greenfield.hub.list("", "secrets", "forecasting")
    assert greenfield.konduktor_calls() == [
        "worker --version",
        "hub cluster enroll",
        "worker worker bootstrap --help",
        "worker worker bootstrap --blob-file",
    ], "the file form, since the CLI's --help documents it"
    assert not list(greenfield.tmp.glob("konduktor-bootstrap.*")), "the blob's private directory was removed"
