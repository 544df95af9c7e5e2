"""Gates refuse answers out of turn, escalate and expire; preflight refusals and a second start write nothing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
from tenantflow.starter.client import RunAlreadyActive, TenantflowClient
from tenantflow.workflows.search import STAGE
from tests.enrollment.conftest import Lab, enrollment_worker, failure, wait_stage, world


async def test_answers_out_of_turn_are_refused_and_reject_writes_nothing(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    before = world(greenfield)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract()),
            id=f"enroll/forecasting/gates-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        refusals: list[tuple[str, list[Any], str]] = [
            ("answer_gate", ["uncordon", GateAnswer()], "gate 'uncordon' is not open"),
            ("answer_gate", ["drain_everything", GateAnswer()], "unknown gate 'drain_everything'"),
            ("approve_plan", [ApprovePlan(plan_hash="0" * 16)], "stale or unknown plan hash"),
        ]
        for update, args, message in refusals:
            with pytest.raises(WorkflowUpdateFailedError) as info:
                await handle.execute_update(update, args=args)
            assert message in str(info.value.cause)
        assert (await wait_stage(handle, "gate:approve_plan")).plan_hash == status.plan_hash
        await handle.execute_update("reject_plan", RejectPlan(reason="wrong worker"))
        result = await handle.result()
    assert result.status == "rejected" and "wrong worker" in result.message
    assert world(greenfield) == before


async def test_unanswered_gate_escalates_then_expires(ts_env: WorkflowEnvironment, greenfield: Lab) -> None:
    before = world(greenfield)
    async with enrollment_worker(ts_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract(), gate_escalate_after_s=3600, gate_expire_after_s=7200),
            id="enroll/forecasting/forecasting-us",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        await wait_stage(handle, "gate:approve_plan")
        await ts_env.sleep(timedelta(seconds=3601))
        status = await wait_stage(handle, "gate:approve_plan-escalated")
        assert status.gates[0].escalated
        assert (await handle.describe()).typed_search_attributes.get(STAGE) == "gate:approve_plan-escalated"
        kind, status = await failure(handle)
    assert kind == "GateExpired"
    assert not status.gates
    assert world(greenfield) == before


@pytest.mark.parametrize(
    ("hub", "worker", "check"),
    [
        ("hub-viewer", "worker", "hub.can-create-bootstrapenrollments: answer no, required yes"),
        ("hub", "worker-viewer", "worker.can-create-namespaces: answer no, required yes"),
        ("hub", "worker", "hub.unique-workerclusters: workerclusters forecasting/forecasting-us already exists"),
    ],
    ids=["hub-cannot-enroll", "worker-cannot-create-namespaces", "duplicate-worker-name"],
)
async def test_preflight_refusal_writes_nothing(
    dev_env: WorkflowEnvironment, greenfield: Lab, hub: str, worker: str, check: str
) -> None:
    if check.startswith("hub.unique"):
        greenfield.hub.seed(
            [
                {
                    "apiVersion": "trainy.ai/v1alpha1",
                    "kind": "WorkerCluster",
                    "metadata": {"name": "forecasting-us", "namespace": "forecasting"},
                    "spec": {"cordoned": False, "enrollment": "forecasting-us"},
                }
            ]
        )
        while not greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting").get("status"):
            await asyncio.sleep(0.05)
    before = world(greenfield)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract(hub=hub, worker=worker)),
            id=f"enroll/forecasting/pf-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        kind, status = await failure(handle)
    assert kind == "PreflightFailed" and status.stage == "preflight-failed"
    assert [f"{f.check}: {f.message}" for f in status.findings if not f.ok] == [check]
    assert [s.name for s in status.steps] == ["hub.preflight"]
    assert world(greenfield) == before


async def test_second_start_for_the_same_worker_is_refused(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    before = world(greenfield)
    async with enrollment_worker(dev_env) as (client, queue):
        api = TenantflowClient(client, queue)
        first = await api.start_enrollment(greenfield.contract())
        assert first.id == "enroll/forecasting/forecasting-us"
        await wait_stage(first, "gate:approve_plan")
        with pytest.raises(RunAlreadyActive, match="enroll/forecasting/forecasting-us is already in progress"):
            await api.start_enrollment(greenfield.contract(brownfield=True))
        await first.terminate("test done")
    assert world(greenfield) == before
