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
a smoke check that finds an error stops the run at the ``smoke_failed`` gate, with
nothing rolled back, to be re-run after a fix, rolled back or waived
(``workflows/smoke_gate.py``, runs with its patch);
the tenant record (:mod:`models.records`) stored in the tenant's cluster keeps them,
and the tenant's ``TenantLifecycle`` (``workflows/lifecycle.py``) starts to keep the
contract's term (runs recorded with the patch :data:`LIFECYCLE_PATCH`). Before anything else the run holds the
tenant (``workflows/tenant_hold.py``, runs with its patch): while another run of the tenant holds it, it ends.

Approval binds what is applied: right after it the plan activities run again
(read-only); if the plan's hash changed (an object appeared or changed while the
gate waited), ``approve_plan`` opens again with the new plan and what changed. An
undo that keeps failing stops the rollback at the ``retry_rollback`` gate with the
objects left in ``status`` (``workflows/rollback.py``). The gate, the saga and the record are collaborators the
workflow owns (its :class:`~tenantflow.workflows.run_state.RunState` and a
:class:`~tenantflow.workflows.tenant_run.TenantRun`, shared with its sibling ``TenantChange`` through
:class:`~tenantflow.workflows.tenant_run.TenantWorkflow`).

Runs with :data:`LEAN_HISTORY_PATCH` keep their history short: the read-only
preflight and plan steps (and the handover render) run as local activities, those
of one phase at once (after the capacity preflight, which chooses the nodes), each
still retried with the step retry policy and listed in ``status``; write and smoke
steps stay activities in runbook order. That patch implies every earlier patch of
the run (:class:`~tenantflow.workflows.patches.Patches`), so it is the run's one
patch marker. Runs recorded without it upsert ``TenantSlug`` first, before any patch check, as every onboarding
did before d06ca5d; only lean runs go through :meth:`~tenantflow.workflows.gate_waits.Gates.label`, which checks
``stage-upsert-on-change`` before that upsert. A run of 6408cad (the release before ``label``: its slug's upsert
ahead of its ``stage-upsert-on-change`` marker, ``tests/histories/onboarding-refused-6408cad.json``) replays, so it
can be queried after the upgrade. The price: a run of d06ca5d up to the lean-history commit b4b2636 (the marker
first, the same events otherwise, so no code tells the two apart) does not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import Facts, Handover, OnboardingInput, OnboardingResult, StepInput
    from tenantflow.models.plan import Plan, PlanStep
    from tenantflow.models.results import EnsureResult, Finding
    from tenantflow.models.runbook import CAPACITY, PLAN, PREFLIGHT, SMOKE
    from tenantflow.models.step import Step

from tenantflow.workflows.gate_waits import STAGE_ON_CHANGE_PATCH
from tenantflow.workflows.records import APPROVALS_PATCH, TENANT_RECORD_PATCH
from tenantflow.workflows.rollback import RETRY_ROLLBACK_PATCH
from tenantflow.workflows.run_state import REPLAN_PATCH
from tenantflow.workflows.search import TENANT_SLUG
from tenantflow.workflows.smoke_gate import (
    SMOKE_FAILED,
    SMOKE_GATE_PATCH,
    SmokeGate,
    smoke_errors,
    smoke_failed_gate,
    step_failed,
)
from tenantflow.workflows.tenant_hold import HOLD_PATCH, claim
from tenantflow.workflows.tenant_run import UNDO_PLANNED_PATCH, TenantWorkflow
from tenantflow.workflows.term_start import start_lifecycle

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


@workflow.defn(name="TenantOnboarding")
class TenantOnboarding(TenantWorkflow):
    WORKFLOW = "TenantOnboarding"
    YES_NO_GATES = (*TenantWorkflow.YES_NO_GATES, SMOKE_FAILED)
    smoke_failed, smoke_failed_signal = smoke_failed_gate()

    def __init__(self) -> None:
        super().__init__()
        self.smoke = SmokeGate(self.state)
        self._lean = False
        """Read-only steps run as local activities, a phase's at once (:data:`LEAN_HISTORY_PATCH`)."""
        self._gate_times = (timedelta(0), timedelta(0))
        """How long a gate waits before it escalates, and before it expires (the run's input)."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        state, tenant = self.state, self.tenant
        contract = params.contract
        self._lean = state.patches.imply(LEAN_HISTORY_PATCH, IMPLIED_PATCHES)
        state.target = state.steps.target = contract.slug
        self._label(contract.slug)
        self._gate_times = (
            timedelta(seconds=params.approval_escalate_after_s),
            timedelta(seconds=params.approval_expire_after_s),
        )
        if workflow.patched(HOLD_PATCH):
            await claim(state, contract.slug)

        first = StepInput(contract=contract, run_id=workflow.info().workflow_id)
        outcome = await tenant.gated_writes(first, params, self._preflight, self._build_plan, self._apply_and_finish)
        if isinstance(outcome, OnboardingResult):
            return outcome
        plan, applied, handover = outcome
        if state.patches.has(TENANT_RECORD_PATCH):
            await tenant.store_record(contract, applied, handover)
        if state.patches.has(LIFECYCLE_PATCH):
            state.gates.set_stage("term", "Starting the tenant's lifecycle: the contract's term as a timer")
            said = await start_lifecycle(contract)
            state.findings.append(Finding.passed("term", said))
        return tenant.completed(f"Tenant {contract.slug} onboarded", plan, applied, handover)

    def _label(self, slug: str) -> None:
        """Make the run findable by its tenant: a lean run as :meth:`~tenantflow.workflows.gate_waits.Gates.label`
        does, a run recorded before it by an upsert ahead of any patch check (as 6408cad and earlier releases did)."""
        if self._lean:
            self.state.gates.label(TENANT_SLUG, slug)
        else:
            workflow.upsert_search_attributes([TENANT_SLUG.value_set(slug)])

    async def _apply_and_finish(self, step_input: StepInput, applied: list[EnsureResult]) -> Handover:
        facts = await self.tenant.apply(step_input, applied)
        return await self._finish(step_input.model_copy(update={"facts": facts}))

    async def _preflight(self, step_input: StepInput) -> Facts:
        state = self.state
        if self._lean:
            capacity = await state.steps.run(CAPACITY.preflight, step_input, local=True)
            state.findings.extend(capacity.findings)
            rest = await self._reads(PREFLIGHT[1:], step_input.model_copy(update={"facts": capacity.facts}))
            state.findings.extend(finding for result in rest for finding in result.findings)
            return capacity.facts
        facts = step_input.facts
        for step in PREFLIGHT:
            result = await state.steps.run(step, step_input)
            state.findings.extend(result.findings)
            if step is CAPACITY.preflight:
                facts = result.facts
                step_input = step_input.model_copy(update={"facts": facts})
        return facts

    async def _reads(self, steps: Sequence[Step[StepInput, R]], step_input: StepInput) -> list[R]:
        """Read-only steps at once, as local activities: their results in ``steps`` order (the first failure is
        raised; nothing was written)."""
        return list(await asyncio.gather(*(self.state.steps.run(step, step_input, local=True) for step in steps)))

    async def _build_plan(self, step_input: StepInput) -> Plan:
        state = self.state
        state.gates.set_stage("planning", "Computing the plan")
        steps: list[PlanStep] = []
        if self._lean:
            steps = [planned for layer in await self._reads(PLAN, step_input) for planned in layer]
        else:
            for step in PLAN:
                steps.extend(await state.steps.run(step, step_input))
        contract = step_input.contract
        state.plan = Plan(
            title=f"Onboard {contract.slug}", steps=steps, notes=[f"nodes: {', '.join(step_input.facts.nodes)}"]
        )
        return state.plan

    async def _finish(self, step_input: StepInput) -> Handover:
        """The smoke checks (waiting at ``smoke_failed`` while they fail: ``workflows/smoke_gate.py``), validation
        and the handover sheet."""
        checked = await self._smoke(step_input)
        facts = await self.smoke.settle(checked, lambda: self._smoke(step_input), *self._gate_times)
        final = step_input.model_copy(update={"facts": facts})
        handover = await self.tenant.validate_and_hand_over(final, self._smoke_failures, local=self._lean)
        return self.smoke.on_sheet(handover)

    async def _smoke(self, step_input: StepInput) -> Facts:
        """The smoke checks in runbook order from ``step_input``'s facts (those the apply steps left); the facts
        with their evidence. A check whose activity fails is an error finding (runs with :data:`SMOKE_GATE_PATCH`),
        so it stops at ``smoke_failed`` too."""
        state = self.state
        facts = step_input.facts
        for step in SMOKE:
            state.gates.set_stage(f"smoke:{step.short}", f"Smoke test: {step.summary}")
            try:
                result = await state.steps.run(
                    step, step_input.model_copy(update={"facts": facts}), summary=f"smoke: {step.summary}"
                )
            except ActivityError as err:
                if isinstance(err.cause, CancelledError) or not state.patches.has(SMOKE_GATE_PATCH):
                    raise
                state.findings.append(step_failed(step.name, err))
                continue
            state.findings.extend(result.findings)
            facts = result.facts
        return facts

    def _smoke_failures(self) -> list[Finding]:
        """A failed smoke test fails the run like a failed validation (runs with :data:`SMOKE_FAILURES_PATCH`):
        never a "completed" handover."""
        if not self.state.patches.has(SMOKE_FAILURES_PATCH):
            return []
        return smoke_errors(self.state.findings)
