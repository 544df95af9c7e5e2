"""``WorkerDecommission``: a gated plan of the whole decommission, then cordon, drain, remove the Hub enrollment, reset.

Every write is a ``konduktor`` CLI command the runbook documents (``cluster cordon``,
``cluster decommission --yes``, ``worker reset``). The plan (the Hub objects removed and
``konduktor worker reset --dry-run``) is published and waits for ``approve_plan`` with its
hash before the first write (or ``reject_plan``: nothing is written); then the worker is
cordoned, remote work drained, the Hub enrollment removed and the approved dry run applied
(``worker.reset_approved``). The dry run is approved as the CLI printed it: the gate shows
its text verbatim and the plan hash covers it; a dry run with no line that reads as an action
is refused before the gate (``ResetPlanUnreadable``). When the dry run prints other text
right before the reset, nothing is reset and ``approve_plan`` opens again with the new text
and its difference (runs recorded before the ``decommission-reset-text`` patch approved the
entries read from the dry run and failed with ``ResetPlanChanged``). Reset removes only what
Konduktor installed (by label), releases preset objects and leaves customer workloads,
Kueue/JobSet objects, cert-manager and a shared VictoriaMetrics operator. It does
not need the agent. Runs recorded before the ``decommission-gate-first`` patch
cordoned and removed the enrollment before the gate and recomputed the reset. The
worker's record gets a last version with the status ``decommissioned``.
"""

from __future__ import annotations

import difflib
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_steps import (
        HUB_CORDON,
        HUB_REMOVE_ENROLLMENT,
        RECORD_WORKERCLUSTER,
        WORKER_RESET,
        WORKER_RESET_APPROVED,
        WORKER_RESET_PLAN,
        WORKER_WAIT_NO_REMOTE_WORK,
    )
    from tenantflow.models.enrollment_workflows import (
        ApprovedReset,
        ConditionWait,
        Cordon,
        DecommissionInput,
        DecommissionResult,
        EnrollmentStep,
        dry_run_of,
    )
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.records import RecordStatus, WorkerClusterRecord
    from tenantflow.models.results import EnsureResult

from tenantflow.workflows.enrollment_failures import application_error
from tenantflow.workflows.gate_handlers import GatedWorkflow, approve_plan_update, status_query
from tenantflow.workflows.records import WORKER_RECORD_PATCH, Records
from tenantflow.workflows.search import WORKER_CLUSTER

GATE_FIRST_PATCH = "decommission-gate-first"
RESET_TEXT_PATCH = "decommission-reset-text"
"""Runs with it approve the reset dry run's text and go back to the gate when it changed before the reset."""
PLAN_NAMES_HUB_PATCH = "decommission-plan-names-hub"
"""Runs with it name the Hub (the contract's registry name) in the plan's Hub steps, so the plan hash an approval
names binds the Hub whose enrollment is removed, as the reset dry run's step binds the worker (a contract sent to
the HTTP API may name any Hub of the worker's registry); runs recorded before plan the Hub steps without it."""


def dry_run_shown(steps: list[PlanStep]) -> str:
    """The reset dry run of a plan's steps as the gate shows it: verbatim, in a fenced block ("" when none)."""
    shown = dry_run_of(steps)
    if not shown:
        return ""
    return f"`konduktor worker reset --dry-run` printed (sha256 {shown['sha256']}):\n```\n{shown['dry_run']}\n```"


def dry_run_changes(before: list[PlanStep], after: list[PlanStep]) -> list[str]:
    """The lines of the reset dry run that went (``-``) or came (``+``) between two plans."""
    was, now = dry_run_of(before).get("dry_run", ""), dry_run_of(after).get("dry_run", "")
    return [line for line in difflib.ndiff(was.split("\n"), now.split("\n")) if line[:2] in ("- ", "+ ")]


@workflow.defn(name="WorkerDecommission")
class WorkerDecommissionWorkflow(GatedWorkflow):
    WORKFLOW = "WorkerDecommission"
    approve_plan = approve_plan_update(
        "Approve the decommission plan (Hub removal and worker reset) "
        'by its exact hash (payload {"plan_hash": "..."}); cordon, drain, removal and reset run',
        answer="reset plan {plan_hash} approved",
    )
    status = status_query("Stage, reset plan, open gate with how to answer, steps")

    def __init__(self) -> None:
        super().__init__()
        self.records = Records(self.state)

    @workflow.run
    async def run(self, params: DecommissionInput) -> DecommissionResult:
        c = params.contract
        self.state.target = self.state.steps.target = f"{c.tenant_namespace}/{c.worker_name}"
        self.state.gates.label(WORKER_CLUSTER, c.worker_name)
        self._params = params
        step = EnrollmentStep(contract=c)
        if workflow.patched(GATE_FIRST_PATCH):
            return await self._approved_first(step)
        removed = await self._leave_hub(step)
        plan = Plan(
            title=f"worker reset {self.state.target}", steps=await self.state.steps.run(WORKER_RESET_PLAN, step)
        )
        if not await self.state.wait_plan_approval(plan, *self._gate_times()):
            self.state.gates.set_stage("rejected", "The reset plan was rejected; the Hub enrollment is already removed")
            return self._result("rejected", plan, removed)
        self.state.gates.set_stage("reset", "Removing Trainy-installed worker components")
        removed += await self.state.steps.run(WORKER_RESET, step)
        return await self._completed(plan, removed)

    async def _approved_first(self, step: EnrollmentStep) -> DecommissionResult:
        c = step.contract
        text_approved = workflow.patched(RESET_TEXT_PATCH)
        on_hub = {"hub": c.hub.context} if workflow.patched(PLAN_NAMES_HUB_PATCH) else {}
        self.state.gates.set_stage("planning", "`worker reset --dry-run`; nothing is written before approval")
        hub = [
            PlanStep(
                layer="hub",
                kind=kind,
                name=c.worker_name,
                namespace=c.tenant_namespace,
                action=Action.delete,
                detail={**detail, **on_hub},
            )
            for kind, detail in (
                ("WorkerCluster", {"first": "cordon, then drain admitted remote work"}),
                ("BootstrapEnrollment", {}),
            )
        ]
        plan = Plan(
            title=f"decommission {self.state.target}", steps=hub + await self.state.steps.run(WORKER_RESET_PLAN, step)
        )
        if not await self.state.wait_plan_approval(plan, *self._gate_times(), shown=dry_run_shown(plan.steps)):
            self.state.gates.set_stage("rejected", "The decommission plan was rejected; nothing was written")
            return self._result("rejected", plan, [])
        removed = await self._leave_hub(step)
        self.state.gates.set_stage("reset", "Removing exactly the approved Trainy-installed worker components")
        if text_approved:
            return await self._reset_as_approved(step, plan, removed)
        removed += await self.state.steps.run(
            WORKER_RESET_APPROVED, ApprovedReset(contract=c, steps=[s for s in plan.steps if s.layer == "worker"])
        )
        return await self._completed(plan, removed)

    async def _reset_as_approved(
        self, step: EnrollmentStep, plan: Plan, removed: list[EnsureResult]
    ) -> DecommissionResult:
        """Reset exactly the approved dry run; while the dry run prints other text right before the reset, nothing
        is reset and ``approve_plan`` opens again with the new text (rejected: the run ends, the worker not reset)."""
        while (reset := await self._reset_if_unchanged(step, plan)) is None:
            steps = await self.state.steps.run(
                WORKER_RESET_PLAN, step, summary="worker reset --dry-run again: it changed since the approval"
            )
            changed = Plan(title=f"worker reset {self.state.target} (the dry run changed since approval)", steps=steps)
            if not await self.state.wait_plan_approval(
                changed, *self._gate_times(), dry_run_changes(plan.steps, steps), shown=dry_run_shown(steps)
            ):
                self.state.gates.set_stage(
                    "rejected",
                    "The changed reset plan was rejected; the Hub enrollment is removed, the worker not reset",
                )
                return self._result("rejected", changed, removed)
            plan = changed
            self.state.gates.set_stage("reset", "Removing exactly the approved Trainy-installed worker components")
        return await self._completed(plan, removed + reset)

    async def _reset_if_unchanged(self, step: EnrollmentStep, plan: Plan) -> list[EnsureResult] | None:
        """``worker.reset_approved`` of ``plan``'s dry run; None when it refused because the dry run changed."""
        try:
            return await self.state.steps.run(WORKER_RESET_APPROVED, ApprovedReset.of(step.contract, plan.steps))
        except ActivityError as err:
            cause = application_error(err)
            if cause is None or cause.type != "ResetPlanChanged":
                raise
            return None

    async def _leave_hub(self, step: EnrollmentStep) -> list[EnsureResult]:
        """Cordon, wait until no admitted remote work remains, remove the WorkerCluster and its enrollment."""
        c = step.contract
        self.state.gates.set_stage("cordon", "Stopping new Hub dispatch")
        await self.state.steps.run(
            HUB_CORDON, Cordon(contract=c, cordoned=True, reason="decommission"), summary="cordon"
        )
        self.state.gates.set_stage("drain", "Waiting until no admitted remote work remains")
        await self.state.steps.run(
            WORKER_WAIT_NO_REMOTE_WORK, ConditionWait(contract=c, conditions=[], budget_s=self._params.drain_budget_s)
        )
        return await self.state.steps.run(HUB_REMOVE_ENROLLMENT, step, summary="decommission on the Hub")

    def _gate_times(self) -> tuple[timedelta, timedelta]:
        return (
            timedelta(seconds=self._params.gate_escalate_after_s),
            timedelta(seconds=self._params.gate_expire_after_s),
        )

    async def _completed(self, plan: Plan, removed: list[EnsureResult]) -> DecommissionResult:
        if workflow.patched(WORKER_RECORD_PATCH):
            record = WorkerClusterRecord(
                contract=self._params.contract, run=self.records.stamp(), status=RecordStatus.decommissioned
            )
            await self.records.store(RECORD_WORKERCLUSTER, record)
        self.state.gates.set_stage("completed", f"{self.state.target} decommissioned and reset")
        return self._result("completed", plan, removed)

    def _result(self, status: str, plan: Plan, removed: list[EnsureResult]) -> DecommissionResult:
        return DecommissionResult(
            worker=self.state.target,
            status=status,
            plan_hash=plan.plan_hash,
            plan=plan,
            removed=removed,
            approvals=self.state.gates.approvals,
        )


WORKFLOWS = [WorkerDecommissionWorkflow]
