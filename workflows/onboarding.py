"""``TenantOnboarding``: the tenant-onboarding runbook as a durable, gated workflow.

Preflight reads every layer and fails before any write; the plan is published
and waits for ``approve_plan`` with its exact hash; then each runbook step runs
as an idempotent ``<layer>.<step>`` activity whose results go on the saga. Any
failure or cancel after approval unwinds the saga in the runbook's rollback
order. A step that fails (or is cancelled) goes on the saga too: its undo gets
the objects the approved plan said the step would create, found by their
deterministic names, because a step can crash after its writes but before its
result is recorded; the same holds for objects an earlier attempt of a step
created. Smoke tests, end-to-end validation and the handover sheet finish the run;
the tenant record (:mod:`models.records`) stored in the tenant's cluster keeps them,
and the tenant's ``TenantLifecycle`` (``workflows/lifecycle.py``) starts to keep the
contract's term (runs recorded with the patch :data:`LIFECYCLE_PATCH`).

Approval binds what is applied: right after it the plan activities run again
(read-only); if the plan's hash changed (an object appeared or changed while the
gate waited), ``approve_plan`` opens again with the new plan and what changed. An
undo that keeps failing stops the rollback at the ``retry_rollback`` gate with the
objects left in ``status`` (``workflows/rollback.py``).

Runs with :data:`LEAN_HISTORY_PATCH` keep their history short: the read-only
preflight and plan steps (and the handover render) run as local activities, those
of one phase at once (after the capacity preflight, which chooses the nodes), each
still retried with the step retry policy and listed in ``status``; write and smoke
steps stay activities in runbook order. That patch implies every earlier patch of
the run (:class:`~tenantflow.workflows.patches.Patches`), so it is the run's one
patch marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.change import ChangeInput
    from tenantflow.models.gates import ApprovePlan
    from tenantflow.models.onboarding import (
        Facts,
        Handover,
        OnboardingInput,
        OnboardingResult,
        StepInput,
        StepResult,
    )
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.records import TenantRecord
    from tenantflow.models.results import EnsureResult, Finding, Severity
    from tenantflow.models.runbook import (
        APPLY,
        CAPACITY_PREFLIGHT,
        HANDOVER,
        PLAN,
        PREFLIGHT,
        RECORD_TENANT,
        SMOKE,
        VALIDATE,
        Step,
    )

from tenantflow.workflows.gate_handlers import REPLAN_PATCH, GatedRun
from tenantflow.workflows.gate_waits import STAGE_ON_CHANGE_PATCH
from tenantflow.workflows.lifecycle import start_lifecycle
from tenantflow.workflows.records import (
    APPROVALS_PATCH,
    TENANT_RECORD_PATCH,
    run_stamp,
    stamped_approvals,
    store_record,
)
from tenantflow.workflows.rollback import RETRY_ROLLBACK, RETRY_ROLLBACK_PATCH, SagaRun
from tenantflow.workflows.saga import Saga, as_planned
from tenantflow.workflows.search import TENANT_SLUG

UNDO_PLANNED_PATCH = "undo-planned-creates"
"""Histories recorded before failed steps were compensated replay without it."""
LIFECYCLE_PATCH = "tenant-lifecycle"
"""Histories recorded before a completed onboarding started the tenant's lifecycle replay without it."""
SMOKE_FAILURES_PATCH = "smoke-failures-stop"
"""Histories recorded before a failed smoke test failed the run replay without it."""
LEAN_HISTORY_PATCH = "onboarding-lean-history"
"""Read-only steps as local activities, a phase's at once; histories recorded before it replay one activity each."""
IMPLIED_PATCHES = (
    STAGE_ON_CHANGE_PATCH,
    REPLAN_PATCH,
    UNDO_PLANNED_PATCH,
    SMOKE_FAILURES_PATCH,
    APPROVALS_PATCH,
    TENANT_RECORD_PATCH,
    LIFECYCLE_PATCH,
    RETRY_ROLLBACK_PATCH,
)
"""The patches a run with :data:`LEAN_HISTORY_PATCH` has without their markers: everything onboarding does now."""


R = TypeVar("R")


def preflight_failed(errors: list[Finding]) -> ApplicationError:
    """The failure of a run whose preflight found ``errors``: each with its fix, nothing written."""
    return ApplicationError(
        "preflight failed, nothing was written: "
        + "; ".join(f"{f.check}: {f.message}" + (f" (fix: {f.fix})" if f.fix else "") for f in errors),
        [f.model_dump(mode="json") for f in errors],
        type="PreflightFailed",
        non_retryable=True,
    )


def validation_failed(failed: list[Finding]) -> ApplicationError:
    """The failure of a run whose smoke tests or validation found ``failed``."""
    return ApplicationError(
        "validation failed: "
        + "; ".join(f"{f.check}: {f.message}" + (f" (fix: {f.fix})" if f.fix else "") for f in failed),
        type="ValidationFailed",
        non_retryable=True,
    )


@workflow.defn(name="TenantOnboarding")
class TenantOnboarding(SagaRun):
    WORKFLOW = "TenantOnboarding"
    YES_NO_GATES = (RETRY_ROLLBACK,)

    @workflow.update(
        name="approve_plan",
        description="Approve the published plan by its exact hash (payload "
        '{"plan_hash": "...", "approver": "..."}); the apply steps start',
    )
    async def approve_plan(self, approval: ApprovePlan) -> str:  # type: ignore[override]  # self is this class
        return self._approve(approval)

    approve_plan.validator(GatedRun._validate_approve)

    @workflow.signal(
        name="approve_plan_signal",
        description="Signal form of approve_plan (same payload; a stale hash "
        "is ignored with a warning, prefer the update which refuses it)",
    )
    def approve_plan_signal(self, approval: ApprovePlan) -> None:
        self._approve_by_signal(approval)

    def __init__(self) -> None:
        self._init_gated()
        self._saga = Saga()
        self._facts = Facts()
        self._lean = False
        """Read-only steps run as local activities, a phase's at once (:data:`LEAN_HISTORY_PATCH`)."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        contract = params.contract
        self._lean = self._patches.imply(LEAN_HISTORY_PATCH, IMPLIED_PATCHES)
        self._target = self._steps.target = contract.slug
        self._gates.label(TENANT_SLUG, contract.slug)

        self._gates.set_stage("preflight", "Reading every layer; nothing is written before approval")
        facts = self._facts = await self._preflight(StepInput(contract=contract, run_id=workflow.info().workflow_id))
        self._stop_on_preflight_errors()
        step_input = StepInput(contract=contract, facts=facts, run_id=workflow.info().workflow_id)
        outcome = await self._gated_writes(step_input, params, self._build_plan, self._apply_and_finish)
        if isinstance(outcome, OnboardingResult):
            return outcome
        plan, applied, handover = outcome
        if self._patches.has(TENANT_RECORD_PATCH):
            record = TenantRecord(contract=contract, run=run_stamp(self), applied=applied, handover=handover)
            await store_record(self, RECORD_TENANT, record)
        if self._patches.has(LIFECYCLE_PATCH):
            self._gates.set_stage("term", "Starting the tenant's lifecycle: the contract's term as a timer")
            said = await start_lifecycle(contract)
            self._findings.append(Finding(check="term", ok=True, severity=Severity.info, message=said))
        return self._completed(f"Tenant {contract.slug} onboarded", plan, applied, handover)

    def _completed(self, said: str, plan: Plan, applied: list[EnsureResult], handover: Handover) -> OnboardingResult:
        self._gates.set_stage("completed", f"{said}; handover sheet in the result")
        return OnboardingResult(
            slug=self._target,
            status="completed",
            plan_hash=plan.plan_hash,
            plan=plan,
            applied=applied,
            findings=self._findings,
            handover=handover,
            approvals=self._gates.approvals,
        )

    def _stop_on_preflight_errors(self) -> None:
        if self._errors():
            self._gates.set_stage("preflight-failed", "Preflight failed; nothing was written")
            raise preflight_failed(self._errors())

    async def _gated_writes(
        self,
        step_input: StepInput,
        params: OnboardingInput | ChangeInput,
        build: Callable[[StepInput], Awaitable[Plan]],
        write: Callable[[StepInput, list[EnsureResult]], Awaitable[Handover]],
    ) -> tuple[Plan, list[EnsureResult], Handover] | OnboardingResult:
        """Build the plan, wait for its approval (re-planned before the first write), then ``write``; a failure or
        cancel unwinds the saga and re-raises. (plan, applied, handover), or the result of a rejected plan."""
        escalate = timedelta(seconds=params.approval_escalate_after_s)
        expire = timedelta(seconds=params.approval_expire_after_s)
        plan = await build(step_input)
        approved = await self._wait_plan_approval(plan, escalate, expire)
        if approved:
            approved, plan = await self._reapprove_if_changed(plan, lambda: build(step_input), escalate, expire)
        if not approved:
            self._gates.set_stage("rejected", "The plan was rejected; nothing was written")
            reason = self._rejected.reason if self._rejected else ""
            return OnboardingResult(
                slug=step_input.contract.slug,
                status="rejected",
                plan_hash=plan.plan_hash,
                plan=plan,
                approvals=self._gates.approvals,
                message=f"plan rejected: {reason}",
            )
        applied: list[EnsureResult] = []
        try:
            handover = await write(step_input, applied)
        except (ActivityError, ApplicationError, asyncio.CancelledError) as err:
            self._gates.set_stage("rolling-back", f"Rolling back after: {err}")
            await self._roll_back(self._saga, step_input.contract, self._facts, escalate, expire)
            self._gates.set_stage("rolled-back", f"Rolled back after: {err}")
            raise
        return plan, applied, handover.with_approvals(stamped_approvals(self))

    async def _apply_and_finish(self, step_input: StepInput, applied: list[EnsureResult]) -> Handover:
        facts = await self._apply(step_input, applied)
        return await self._finish(step_input.model_copy(update={"facts": facts}))

    async def _preflight(self, step_input: StepInput) -> Facts:
        if self._lean:
            capacity = await self._steps.run(CAPACITY_PREFLIGHT, step_input, local=True)
            self._findings.extend(capacity.findings)
            rest = await self._reads(PREFLIGHT[1:], step_input.model_copy(update={"facts": capacity.facts}))
            self._findings.extend(finding for result in rest for finding in result.findings)
            return capacity.facts
        facts = step_input.facts
        for step in PREFLIGHT:
            result = await self._steps.run(step, step_input)
            self._findings.extend(result.findings)
            if step is CAPACITY_PREFLIGHT:
                facts = result.facts
                step_input = step_input.model_copy(update={"facts": facts})
        return facts

    async def _reads(self, steps: Sequence[Step[StepInput, R]], step_input: StepInput) -> list[R]:
        """Read-only steps at once, as local activities: their results in ``steps`` order (the first failure is
        raised; nothing was written)."""
        return list(await asyncio.gather(*(self._steps.run(step, step_input, local=True) for step in steps)))

    async def _build_plan(self, step_input: StepInput) -> Plan:
        self._gates.set_stage("planning", "Computing the plan")
        steps: list[PlanStep] = []
        if self._lean:
            steps = [planned for layer in await self._reads(PLAN, step_input) for planned in layer]
        else:
            for step in PLAN:
                steps.extend(await self._steps.run(step, step_input))
        contract = step_input.contract
        self._plan = Plan(
            title=f"Onboard {contract.slug}", steps=steps, notes=[f"nodes: {', '.join(step_input.facts.nodes)}"]
        )
        return self._plan

    async def _apply(self, step_input: StepInput, applied: list[EnsureResult]) -> Facts:
        facts = step_input.facts
        for step in APPLY:
            self._gates.set_stage(f"apply:{step.name}", f"Applying {step.name}: {step.summary}")
            patched = self._patches.has(UNDO_PLANNED_PATCH)
            planned = self._planned_creates(step) if patched else []
            try:
                result = await self._steps.run(
                    step,
                    step_input.model_copy(update={"facts": facts}),
                    summary=f"{step.layer}: {step.summary}",
                    wait_for_cancel=patched,
                )
            except BaseException:
                self._saga.push(step, [], planned)
                raise
            self._saga.push(step, result.results, planned)
            if patched and workflow.cancellation_reason() is not None:
                # a cancel that arrived while the step ran waited for it to finish, and its result swallows
                # the CancelledError (temporalio/sdk-python#620): honour it now, with the step on the saga
                raise asyncio.CancelledError(f"cancelled while {step.name} ran")
            applied.extend(as_planned(result.results, planned))
            self._findings.extend(result.findings)
            facts = self._facts = result.facts
        return facts

    def _planned_creates(self, step: Step[StepInput, StepResult]) -> list[PlanStep]:
        """The plan's ``create`` entries this step writes: whatever of them exists later was made by this run."""
        assert self._plan is not None
        return [
            p for p in self._plan.steps if p.layer == step.layer and p.kind in step.kinds and p.action is Action.create
        ]

    async def _finish(self, step_input: StepInput) -> Handover:
        facts = step_input.facts
        for step in SMOKE:
            self._gates.set_stage(f"smoke:{step.short}", f"Smoke test: {step.summary}")
            result = await self._steps.run(
                step, step_input.model_copy(update={"facts": facts}), summary=f"smoke: {step.summary}"
            )
            self._findings.extend(result.findings)
            facts = result.facts
        final = step_input.model_copy(update={"facts": facts})
        self._gates.set_stage("validate", "End-to-end validation: what done looks like")
        validation = await self._steps.run(VALIDATE, final)
        self._findings.extend(validation.findings)
        failed = [f for f in validation.findings if f.blocks]
        if self._patches.has(SMOKE_FAILURES_PATCH):
            # a failed smoke test fails the run like a failed validation: never a "completed" handover
            failed = [f for f in self._findings if f.check.startswith("smoke.") and f.blocks] + failed
        if failed:
            raise validation_failed(failed)
        self._gates.set_stage("handover", "Rendering the handover sheet")
        return await self._steps.run(HANDOVER, final, local=self._lean)

    def _errors(self) -> list[Finding]:
        return [f for f in self._findings if f.blocks]
