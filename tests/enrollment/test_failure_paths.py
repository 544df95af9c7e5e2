"""Enrollment failure paths: an expired gate after uncordon keeps the worker, cancel rolls back, rollback goes on.

The gates are answered by the update of their own name (``submissions_paused``,
``approve_adoption``, ``uncordon``: the enrollment part of the gate enumeration in
tests/workflow/test_gate_updates.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import INSTALLED_BY, EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import GateAnswer
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, wait_stage


async def brownfield_until(
    client: Client, queue: str, lab: Lab, gates: tuple[str, ...], last: str
) -> WorkflowHandle[Any, EnrollmentResult]:
    """Start a brownfield enrollment, approve it and answer ``gates`` by name; return at gate ``last``."""
    handle = await start_approved(client, queue, lab.contract(brownfield=True), condition_budget_s=20)
    for gate in gates:
        await wait_stage(handle, f"gate:{gate}", timeout_s=60)
        assert await handle.execute_update(gate, GateAnswer(approver="ops")) == f"{gate} answered by ops"
    await wait_stage(handle, f"gate:{last}", timeout_s=60)
    return handle


async def test_resume_submissions_expiring_leaves_the_worker_enrolled(
    ts_env: WorkflowEnvironment, brownfield: Lab
) -> None:
    async with enrollment_worker(ts_env) as (client, queue):
        handle = await brownfield_until(
            client, queue, brownfield, ("submissions_paused", "approve_adoption", "uncordon"), "resume_submissions"
        )
        kind, status = await failure(handle)
    assert kind == "GateExpired"
    wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert wc["spec"]["cordoned"] is False, "a worker that passed its canary stays dispatch-ready"
    assert brownfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)
    assert status.stage == "stopped-enrolled"
    stopped = [f for f in status.findings if f.check == "enrollment.stopped"]
    assert len(stopped) == 1 and "resume the organization's submission paths" in stopped[0].fix
    assert "worker.uninstall" not in {s.name for s in status.steps}


async def test_cancel_before_uncordon_rolls_back(dev_env: WorkflowEnvironment, brownfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await brownfield_until(client, queue, brownfield, ("submissions_paused",), "approve_adoption")
        assert brownfield.hub.list("trainy.ai", "workerclusters", "forecasting")
        await handle.cancel()
        await failure(handle)
        status = await handle.query("status")
    assert status["stage"] == "rolled-back"
    assert not brownfield.hub.list("trainy.ai", "workerclusters", "forecasting")
    assert not brownfield.hub.list("trainy.ai", "bootstrapenrollments", "forecasting")
    assert not brownfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)


async def test_rollback_goes_past_a_failing_step_lists_what_is_left_and_retries(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    greenfield.fault(
        "worker",
        [
            {
                "path": r"/namespaces/trainy-system/deployments$",
                "methods": ["POST"],
                "error_rate": 1.0,
                "error_status": 422,
            },
            {"path": r"/namespaces/trainy-system$", "methods": ["DELETE"], "error_rate": 1.0, "error_status": 403},
        ],
    )
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract(), condition_budget_s=5),
            id=f"enroll/forecasting/rb-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", {"plan_hash": status.plan_hash})
        status = await wait_stage(handle, "gate:retry_rollback")
        assert {s.name: s.state for s in status.steps}["hub.remove_enrollment"] == "done", "it went past the failure"
        assert not greenfield.hub.list("trainy.ai", "bootstrapenrollments", "forecasting"), "nothing left redeemable"
        assert status.leftovers and {item.step for item in status.leftovers} == {"worker.uninstall"}
        assert ("Namespace", "trainy-system") in {(item.kind, item.name) for item in status.leftovers}
        assert greenfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)
        greenfield.fault("worker", [])
        await handle.execute_update("retry_rollback", GateAnswer(approver="ops"))
        kind, status = await failure(handle)
    assert kind == "KonduktorFailed", "the run ends with the failure that started the rollback"
    assert status.stage == "rolled-back" and not status.leftovers
    assert not greenfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)


async def test_canary_refused_after_uncordon_cordons_again_and_keeps_the_worker(
    dev_env: WorkflowEnvironment, brownfield: Lab
) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await brownfield_until(
            client, queue, brownfield, ("submissions_paused", "approve_adoption"), "uncordon"
        )
        brownfield.fault(
            "hub",
            [
                {
                    "path": r"/namespaces/forecasting/jobsets$",
                    "methods": ["POST"],
                    "error_rate": 1.0,
                    "error_status": 422,
                }
            ],
        )
        await handle.execute_update("uncordon", GateAnswer())
        kind, status = await failure(handle)
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert kind == "Invalid"
    assert status.stage == "stopped-enrolled"
    uncordon = "konduktor --context HUB cluster cordon forecasting-us -n forecasting --uncordon"
    shown = metadata.current_details
    assert f"```\n{uncordon}\n```" in shown and "```\ntenantflow decommission forecasting forecasting-us\n```" in shown
    wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert wc["spec"]["cordoned"] is True, "a worker whose canary failed gets no new work"
    assert brownfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)
    stopped = [f for f in status.findings if f.check == "enrollment.stopped"]
    assert len(stopped) == 1 and f"uncordon it ({uncordon})" in stopped[0].fix and "decommission" in stopped[0].fix
