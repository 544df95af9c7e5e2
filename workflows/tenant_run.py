"""What ``TenantOnboarding`` and ``TenantChange`` share: the plan gate, the apply steps on the saga, validation.

Both workflows inherit :class:`TenantWorkflow` (siblings one level under it): the handlers they share, bound once
with the tenant runs' texts, and the :class:`TenantRun` it builds over their run state.
:meth:`TenantRun.gated_writes` runs the preflight (its errors stop the run before any write), builds the plan, waits
for its approval (preflighted and planned again right before the first write, runs with
:data:`REPLAN_PREFLIGHT_PATCH`: a refusal stops the run, a changed plan opens ``approve_plan`` again), runs the
writes and, when they fail or the run is cancelled, unwinds the saga in the runbook's rollback order
(``workflows/rollback.py``). :meth:`TenantRun.apply` runs the runbook's apply steps, each on the saga with the plan's
creations for it (runs recorded with :data:`UNDO_PLANNED_PATCH`): a step can crash after its writes but before its
result is recorded, and an earlier attempt of a step may have created an object whose answer it lost. A step that
adopts existing objects gets the approved plan's adopt lines for it (:data:`ADOPTIONS_PATCH`) and refuses, before it
writes, one that changed after the approval: what is applied is exactly what was approved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import ClassVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.change import ChangeInput
    from tenantflow.models.onboarding import Facts, Handover, OnboardingInput, OnboardingResult, StepInput, StepResult
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.records import TenantRecord
    from tenantflow.models.results import EnsureResult, Finding
    from tenantflow.models.runbook import APPLY, HANDOVER, RECORD_TENANT, VALIDATE
    from tenantflow.models.step import Step
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.gate_handlers import GatedWorkflow, approve_plan_signal_handler, approve_plan_update
from tenantflow.workflows.records import Records
from tenantflow.workflows.rollback import RETRY_ROLLBACK, Rollback, retry_rollback_gate
from tenantflow.workflows.run_state import RunState
from tenantflow.workflows.saga import Saga, as_planned, undo_steps

REPLAN_PREFLIGHT_PATCH = "replan-preflights"
"""Histories recorded before the re-plan after approval ran preflight too replay without it."""
UNDO_PLANNED_PATCH = "undo-planned-creates"
"""Histories recorded before failed steps were compensated replay without it."""
ADOPTIONS_PATCH = "adoptions-checked-at-write"
"""Runs recorded before an apply step got the approved plan's adopt lines (to refuse an object changed since the
approval) replay without them; the marker is written only by a run whose plan adopts something."""

APPROVE_TENANT_PLAN = (
    'Approve the published plan by its exact hash (payload {"plan_hash": "...", "approver": "..."}); '
    "the apply steps start"
)
APPROVE_TENANT_PLAN_SIGNAL = (
    "Signal form of approve_plan (same payload; a stale hash is ignored with a warning, prefer the update which "
    "refuses it)"
)
Written = tuple[Plan, list[EnsureResult], Handover]
"""What an approved run wrote: the plan it applied, the objects, the handover sheet."""


def failures_in_words(findings: list[Finding]) -> str:
    return "; ".join(f"{f.check}: {f.message}" + (f" (fix: {f.fix})" if f.fix else "") for f in findings)


def preflight_failed(errors: list[Finding]) -> ApplicationError:
    """The failure of a run whose preflight found ``errors``: each with its fix, nothing written."""
    return ApplicationError(
        "preflight failed, nothing was written: " + failures_in_words(errors),
        [f.model_dump(mode="json") for f in errors],
        type="PreflightFailed",
        non_retryable=True,
    )


def validation_failed(failed: list[Finding]) -> ApplicationError:
    """The failure of a run whose smoke tests or validation found ``failed``."""
    return ApplicationError(
        "validation failed: " + failures_in_words(failed), type="ValidationFailed", non_retryable=True
    )


class TenantRun:
    """The saga, records and shared steps of one tenant run."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.records = Records(state)
        self.rollback = Rollback(state)
        self.saga = Saga()
        self.facts = Facts()
        """The facts so far: what the rollback's undos are given."""

    def stop_on_preflight_errors(self) -> None:
        if self.state.errors():
            self.state.gates.set_stage("preflight-failed", "Preflight failed; nothing was written")
            raise preflight_failed(self.state.errors())

    async def gated_writes(
        self,
        first: StepInput,
        params: OnboardingInput | ChangeInput,
        preflight: Callable[[StepInput], Awaitable[Facts]],
        build: Callable[[StepInput], Awaitable[Plan]],
        write: Callable[[StepInput, list[EnsureResult]], Awaitable[Handover]],
    ) -> Written | OnboardingResult:
        """``preflight`` from ``first`` (its errors stop the run before any write), build the plan with the facts it
        found, wait for its approval (re-planned before the first write), then ``write``; a failure or cancel
        unwinds the saga and re-raises. (plan, applied, handover), or the result of a rejected plan."""
        state = self.state
        state.gates.set_stage("preflight", "Reading every layer; nothing is written before approval")
        facts = self.facts = await preflight(first)
        self.stop_on_preflight_errors()
        step_input = StepInput(contract=first.contract, facts=facts, run_id=first.run_id)
        escalate = timedelta(seconds=params.approval_escalate_after_s)
        expire = timedelta(seconds=params.approval_expire_after_s)
        plan = await build(step_input)
        approved = await state.wait_plan_approval(plan, escalate, expire)
        if approved:
            current = [step_input]

            async def replan() -> Plan:
                if workflow.patched(REPLAN_PREFLIGHT_PATCH):
                    current[0] = await self.preflight_again(first, preflight)
                return await build(current[0])

            approved, plan = await state.reapprove_if_changed(plan, replan, escalate, expire)
            step_input = current[0]
        if not approved:
            state.gates.set_stage("rejected", "The plan was rejected; nothing was written")
            reason = state.rejected.reason if state.rejected else ""
            return OnboardingResult(
                slug=step_input.contract.slug,
                status="rejected",
                plan_hash=plan.plan_hash,
                plan=plan,
                approvals=state.gates.approvals,
                message=f"plan rejected: {reason}",
            )
        applied: list[EnsureResult] = []
        try:
            handover = await write(step_input, applied)
        except (ActivityError, ApplicationError, asyncio.CancelledError) as err:
            state.gates.set_stage("rolling-back", f"Rolling back after: {err}")
            undo = undo_steps(step_input.contract, self.facts)
            await self.rollback.roll_back(self.saga, undo, escalate, expire)
            state.gates.set_stage("rolled-back", f"Rolled back after: {err}")
            raise
        return plan, applied, handover.with_approvals(self.records.approvals())

    async def preflight_again(self, first: StepInput, preflight: Callable[[StepInput], Awaitable[Facts]]) -> StepInput:
        """The re-plan's preflight (runs with :data:`REPLAN_PREFLIGHT_PATCH`): the same reads and refusals as the
        first, its findings replacing the first's; an error stops the run before any write, with its fix, so what
        preflight refuses (a username someone else took while the gate waited) never becomes an approvable line."""
        state = self.state
        state.gates.set_stage("replan-preflight", "Reading every layer again before the first write; nothing written")
        state.findings = []
        facts = self.facts = await preflight(first)
        self.stop_on_preflight_errors()
        return StepInput(contract=first.contract, facts=facts, run_id=first.run_id)

    async def apply(self, step_input: StepInput, applied: list[EnsureResult]) -> Facts:
        """The runbook's apply steps in order, each on the saga; what they wrote is added to ``applied``."""
        state = self.state
        facts = step_input.facts
        for step in APPLY:
            state.gates.set_stage(f"apply:{step.name}", f"Applying {step.name}: {step.summary}")
            patched = state.patches.has(UNDO_PLANNED_PATCH)
            planned = self.planned_creates(step) if patched else []
            arg = step_input.model_copy(update={"facts": facts, "adoptions": self.approved_adoptions(step)})
            try:
                result = await state.steps.run(
                    step,
                    arg,
                    summary=f"{step.layer}: {step.summary}",
                    wait_for_cancel=patched,
                )
            except BaseException:
                self.saga.push(step, [], planned)
                raise
            self.saga.push(step, result.results, planned)
            if patched and workflow.cancellation_reason() is not None:
                # a cancel that arrived while the step ran waited for it to finish, and its result swallows
                # the CancelledError (temporalio/sdk-python#620): honour it now, with the step on the saga
                raise asyncio.CancelledError(f"cancelled while {step.name} ran")
            applied.extend(as_planned(result.results, planned))
            state.findings.extend(result.findings)
            facts = self.facts = result.facts
        return facts

    def approved_adoptions(self, step: Step[StepInput, StepResult]) -> list[PlanStep]:
        """The approved plan's ``adopt`` entries this step writes, as the approver saw them (runs with
        :data:`ADOPTIONS_PATCH`, asked only when there are any): the step refuses one that changed since."""
        plan = self.state.plan
        assert plan is not None
        lines = [p for p in plan.steps if p.layer == step.layer and p.kind in step.kinds and p.action is Action.adopt]
        return lines if lines and self.state.patches.has(ADOPTIONS_PATCH) else []

    def planned_creates(self, step: Step[StepInput, StepResult]) -> list[PlanStep]:
        """The plan's ``create`` entries this step writes: whatever of them exists later was made by this run."""
        plan = self.state.plan
        assert plan is not None
        return [p for p in plan.steps if p.layer == step.layer and p.kind in step.kinds and p.action is Action.create]

    async def validate_and_hand_over(
        self, final: StepInput, earlier_failures: Callable[[], list[Finding]] = list, local: bool = False
    ) -> Handover:
        """End-to-end validation; the run fails on its errors and on ``earlier_failures()`` (asked after it), else
        the handover sheet is rendered (``local``: as a local activity)."""
        state = self.state
        state.gates.set_stage("validate", "End-to-end validation: what done looks like")
        validation = await state.steps.run(VALIDATE, final)
        state.findings.extend(validation.findings)
        failed = [f for f in validation.findings if f.blocks]
        failed = earlier_failures() + failed
        if failed:
            raise validation_failed(failed)
        state.gates.set_stage("handover", "Rendering the handover sheet")
        return await state.steps.run(HANDOVER, final, local=local)

    async def store_record(self, contract: TenantContract, applied: list[EnsureResult], handover: Handover) -> None:
        record = TenantRecord(contract=contract, run=self.records.stamp(), applied=applied, handover=handover)
        await self.records.store(RECORD_TENANT, record)

    def completed(self, said: str, plan: Plan, applied: list[EnsureResult], handover: Handover) -> OnboardingResult:
        state = self.state
        state.gates.set_stage("completed", f"{said}; handover sheet in the result")
        return OnboardingResult(
            slug=state.target,
            status="completed",
            plan_hash=plan.plan_hash,
            plan=plan,
            applied=applied,
            findings=state.findings,
            handover=handover,
            approvals=state.gates.approvals,
        )


class TenantWorkflow(GatedWorkflow):
    """The base of the tenant runs that apply a contract: the tenant's plan gate, ``retry_rollback`` and a
    :class:`TenantRun` as ``self.tenant``."""

    YES_NO_GATES: ClassVar[tuple[str, ...]] = (RETRY_ROLLBACK,)
    approve_plan = approve_plan_update(APPROVE_TENANT_PLAN)
    approve_plan_signal = approve_plan_signal_handler(APPROVE_TENANT_PLAN_SIGNAL)
    retry_rollback, retry_rollback_signal = retry_rollback_gate()

    def __init__(self) -> None:
        super().__init__()
        self.tenant = TenantRun(self.state)
