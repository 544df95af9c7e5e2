"""A ``konduktor.bootstrap`` attempt retried after its printed plan was approved (its worker lost): a fresh attempt
that prints the same text proceeds without a gate; one that prints other text opens ``approve_plan`` again, showing
the lines that changed. The other enrollment steps are fakes; the bootstrap fake speaks the activity's protocol
with its run (signal ``bootstrap_plan_printed``, query ``bootstrap_plan_answer``)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.records import gate_notify
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import (
    BOOTSTRAP_PRINTED,
    BootstrapPlanPrinted,
    Condition,
    ConditionReport,
    ConditionWait,
    EnrollmentInput,
    EnrollmentResult,
    EnrollmentStep,
)
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.records import WorkerClusterRecord
from tenantflow.models.results import EnsureResult, Finding
from tenantflow.models.status import RunStatus
from tenantflow.models.targets import KubeTarget
from tenantflow.workflows.enrollment import WorkerEnrollmentWorkflow

CONTRACT = WorkerEnrollment(
    hub=KubeTarget(context="hub"),
    worker=KubeTarget(context="worker"),
    tenant_namespace="forecasting",
    worker_name="forecasting-us",
    workload_namespaces=["forecasting"],
)


class Fakes:
    """The greenfield steps; ``konduktor.bootstrap`` prints ``texts[attempt - 1]`` and its first attempt is lost
    after its answer came."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.answers: list[tuple[int, str]] = []

    @activity.defn(name="hub.preflight")
    def preflight(self, step: EnrollmentStep) -> list[Finding]:
        return [Finding.passed("preflight", "fake")]

    @activity.defn(name="worker.plan")
    def plan(self, step: EnrollmentStep) -> list[PlanStep]:
        return [PlanStep(layer="hub", kind="BootstrapEnrollment", name="forecasting-us", action=Action.create)]

    @activity.defn(name="konduktor.bootstrap")
    async def bootstrap(self, step: EnrollmentStep) -> list[EnsureResult]:
        info = activity.info()
        assert step.plan_gate and info.workflow_id
        text = self.texts[info.attempt - 1]
        printed = BootstrapPlanPrinted(text=text, sha256=hashlib.sha256(text.encode()).hexdigest(), form="fake")
        run = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        await run.signal("bootstrap_plan_printed", printed)
        while (answer := await run.query("bootstrap_plan_answer", printed.sha256, result_type=str)) == "waiting":
            await asyncio.sleep(0.1)
        self.answers.append((info.attempt, answer))
        if info.attempt == 1:
            raise ApplicationError("the worker was lost before it answered the prompt", type="WorkerLost")
        return []

    @activity.defn(name="hub.wait_conditions")
    def wait_conditions(self, wait: ConditionWait) -> ConditionReport:
        true = Condition(type="x", status="True", observed_generation=1)
        return ConditionReport(generation=1, converged=True, conditions={c: true for c in wait.conditions})

    @activity.defn(name="records.worker")
    def record(self, record: WorkerClusterRecord) -> None:
        raise ApplicationError("no record store here", type="RecordStoreDown", non_retryable=True)


async def bootstrap_plan(handle: WorkflowHandle[Any, Any], sha256: str) -> RunStatus:
    """The status once approve_plan shows the printed text whose SHA-256 is ``sha256``."""
    while True:
        status = await handle.query("status", result_type=RunStatus)
        steps = status.plan.steps if status.plan and status.stage.startswith("gate:approve_plan") else []
        if any(s.kind == BOOTSTRAP_PRINTED and s.detail["sha256"] == sha256 for s in steps):
            return status
        await asyncio.sleep(0.1)


async def enrolled(env: WorkflowEnvironment, fakes: Fakes) -> tuple[EnrollmentResult, list[RunStatus]]:
    """Run a greenfield enrollment, approving its plan and each printed bootstrap plan; the result and the status
    at each bootstrap gate."""
    queue = f"bootstrap-retry-{uuid.uuid4().hex[:8]}"
    activities = [fakes.preflight, fakes.plan, fakes.bootstrap, fakes.wait_conditions, fakes.record]
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[WorkerEnrollmentWorkflow],
        activities=[*activities, *gate_notify.ACTIVITIES],
        activity_executor=ThreadPoolExecutor(4),
    ):
        handle = await env.client.start_workflow(
            WorkerEnrollmentWorkflow.run,
            EnrollmentInput(contract=CONTRACT),
            id=f"enroll/forecasting/{uuid.uuid4().hex[:6]}",
            task_queue=queue,
        )
        shown = []
        for text in dict.fromkeys(fakes.texts):
            sha256 = hashlib.sha256(text.encode()).hexdigest()
            if not shown:
                status = await handle.query("status", result_type=RunStatus)
                while not status.stage.startswith("gate:approve_plan"):
                    await asyncio.sleep(0.1)
                    status = await handle.query("status", result_type=RunStatus)
                await handle.execute_update("approve_plan", {"plan_hash": status.plan_hash})
            shown.append(await bootstrap_plan(handle, sha256))
            await handle.execute_update("approve_plan", {"plan_hash": shown[-1].plan_hash})
        return await handle.result(), shown


async def test_a_retry_that_prints_the_approved_text_proceeds_without_a_gate(dev_env: WorkflowEnvironment) -> None:
    fakes = Fakes(["plan A\nApply? [y/N] ", "plan A\nApply? [y/N] "])
    result, shown = await enrolled(dev_env, fakes)
    assert result.status == "completed"
    assert fakes.answers == [(1, "approved"), (2, "approved")]
    assert len(shown) == 1 and [a.plan_hash for a in result.approvals][-1] == shown[0].plan_hash
    assert len(result.approvals) == 2, "the plan and the printed text, each approved once"


async def test_a_retry_that_prints_other_text_opens_the_gate_again_with_the_difference(
    dev_env: WorkflowEnvironment,
) -> None:
    fakes = Fakes(["plan A\nApply? [y/N] ", "plan B\nApply? [y/N] "])
    result, shown = await enrolled(dev_env, fakes)
    assert result.status == "completed"
    assert fakes.answers == [(1, "approved"), (2, "approved")]
    [first, again] = shown
    assert first.plan_hash != again.plan_hash
    [gate] = again.gates
    assert "CHANGED since the last approval" in gate.description and "- plan A" in gate.description
    assert "+ plan B" in gate.description and "plan B\nApply? [y/N] " in gate.description
    assert len(result.approvals) == 3
