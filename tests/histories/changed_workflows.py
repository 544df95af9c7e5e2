"""Unversioned edits of today's workflows, for the replay tests (tests/histories/test_*.py).

They live apart from the test modules because Temporal's sandbox imports a workflow's module afresh for every run it
replays: a test module would bring pytest, and pytest's rewriting of its asserts, into each replay (most of those
tests' CPU). This module imports nothing but temporalio's workflow API and, passed through, tenantflow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.change import ChangeInput
    from tenantflow.models.enrollment_steps import HUB_CORDON, HUB_REMOVE_ENROLLMENT, WORKER_WAIT_NO_REMOTE_WORK
    from tenantflow.models.enrollment_workflows import (
        ConditionWait,
        Cordon,
        DecommissionInput,
        DecommissionResult,
        EnrollmentInput,
        EnrollmentResult,
        EnrollmentStep,
    )
    from tenantflow.models.lifecycle import LifecycleInput, LifecycleResult, NoticeKind
    from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
    from tenantflow.models.onboarding import Facts, OnboardingInput, OnboardingResult, StepInput, StepResult
    from tenantflow.models.plan import Plan, PlanStep
    from tenantflow.models.results import EnsureResult
    from tenantflow.models.runbook import CAPACITY, PREFLIGHT
    from tenantflow.models.step import Step
    from tenantflow.models.tenant import TenantContract
    from tenantflow.workflows.change import TenantChange
    from tenantflow.workflows.decommission import WorkerDecommissionWorkflow
    from tenantflow.workflows.enrollment import WorkerEnrollmentWorkflow
    from tenantflow.workflows.gate_waits import GATE_NOTIFY_PATCH
    from tenantflow.workflows.lifecycle import TenantLifecycle
    from tenantflow.workflows.offboarding import TenantOffboarding
    from tenantflow.workflows.onboarding import TenantOnboarding
    from tenantflow.workflows.patches import Patches
    from tenantflow.workflows.saga import Entry, Saga
    from tenantflow.workflows.search import TENANT_SLUG
    from tenantflow.workflows.smoke_gate import SMOKE_GATE_PATCH, SmokeGate
    from tenantflow.workflows.tenant_run import TenantRun


@workflow.defn(name="TenantOnboarding")
class OnboardingWithExtraStep(TenantOnboarding):
    """Today's onboarding plus one activity before preflight: what an unversioned edit looks like."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        await workflow.execute_activity(
            CAPACITY.preflight.name, StepInput(contract=params.contract), start_to_close_timeout=timedelta(minutes=1)
        )
        return await super().run(params)


@workflow.defn(name="WorkerEnrollment")
class EnrollmentWithTimer(WorkerEnrollmentWorkflow):
    """Today's enrollment with a timer slipped in front: also a command the history does not have."""

    @workflow.run
    async def run(self, params: EnrollmentInput) -> EnrollmentResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(params)


@workflow.defn(name="TenantOffboarding")
class OffboardingWithExtraStep(TenantOffboarding):
    """Offboarding with one more read in front (adding a command)."""

    @workflow.run
    async def run(self, params: OffboardingInput) -> OffboardingResult:
        await workflow.execute_activity(
            CAPACITY.preflight.name, StepInput(contract=params.contract), start_to_close_timeout=timedelta(minutes=1)
        )
        return await super().run(params)


@workflow.defn(name="TenantOnboarding")
class OnboardingWithoutAPreflight(TenantOnboarding):
    """Onboarding that skips its last preflight read (removing a command)."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)

    async def _preflight(self, step_input: StepInput) -> Facts:
        facts = step_input.facts
        for step in PREFLIGHT[:-1]:
            result = await self.state.steps.run(step, step_input)
            if step is CAPACITY.preflight:
                facts = result.facts
                step_input = step_input.model_copy(update={"facts": facts})
        return facts


@workflow.defn(name="TenantOffboarding")
class OffboardingWithoutPurgeGate(TenantOffboarding):
    """Offboarding whose confirm_purge gate no longer waits (removing the gate's timer)."""

    @workflow.run
    async def run(self, params: OffboardingInput) -> OffboardingResult:
        return await super().run(params)

    async def _confirm_purge(self, slug: str, escalate: timedelta, expire: timedelta) -> None:
        return None


@workflow.defn(name="TenantOffboarding")
class OffboardingLeavingJobs(TenantOffboarding):
    """Offboarding that removes the accounts without cancelling the tenant's jobs first (removing an activity)."""

    @workflow.run
    async def run(self, params: OffboardingInput) -> OffboardingResult:
        return await super().run(params)

    async def _cancel_jobs(self, plan: Plan) -> list[EnsureResult]:
        return []


class NoSmokeGate(SmokeGate):
    """Goes on past failed smoke checks without waiting."""

    async def settle(
        self, facts: Facts, check: Callable[[], Awaitable[Facts]], escalate_after: timedelta, expire_after: timedelta
    ) -> Facts:
        return facts


@workflow.defn(name="TenantOnboarding")
class OnboardingWithoutSmokeGate(TenantOnboarding):
    """Onboarding whose smoke_failed gate no longer waits (removing the gate's timer and the checks' re-run)."""

    def __init__(self) -> None:
        super().__init__()
        self.smoke = NoSmokeGate(self.state)

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


class SmokeGateUnguarded(Patches):
    """Takes the smoke gate's path without checking its patch."""

    def has(self, patch_id: str) -> bool:
        return patch_id == SMOKE_GATE_PATCH or super().has(patch_id)


@workflow.defn(name="TenantOnboarding")
class OnboardingWithUnguardedSmokeGate(TenantOnboarding):
    """Onboarding whose smoke_failed gate is not behind its patch (adding the gate's timer to older runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.state.patches = self.state.gates.patches = SmokeGateUnguarded()

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


class GateNotificationsUnguarded(Patches):
    """Notifies at gates without checking the patch."""

    def has(self, patch_id: str) -> bool:
        return patch_id == GATE_NOTIFY_PATCH or super().has(patch_id)


class GateNotificationsDropped(Patches):
    """Never takes the gate notifications' path, even in a run that has the patch."""

    def has(self, patch_id: str) -> bool:
        return patch_id != GATE_NOTIFY_PATCH and super().has(patch_id)


@workflow.defn(name="TenantOnboarding")
class OnboardingWithUnguardedGateNotifications(TenantOnboarding):
    """Onboarding whose gate notifications are not behind their patch (adding local activities to older runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.state.patches = self.state.gates.patches = GateNotificationsUnguarded()

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


@workflow.defn(name="TenantOnboarding")
class OnboardingWithoutGateNotifications(TenantOnboarding):
    """Onboarding that stopped notifying at gates (removing local activities from runs that notified)."""

    def __init__(self) -> None:
        super().__init__()
        self.state.patches = self.state.gates.patches = GateNotificationsDropped()

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


class ReversedSaga(Saga):
    def ordered(self) -> list[Entry]:
        return list(reversed(super().ordered()))


@workflow.defn(name="TenantOnboarding")
class OnboardingWithReversedRollback(TenantOnboarding):
    """Onboarding that unwinds in plain reverse order instead of the runbook's (reordering commands)."""

    def __init__(self) -> None:
        super().__init__()
        self.tenant.saga = ReversedSaga()

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


@workflow.defn(name="WorkerDecommission")
class DecommissionRemovingFirst(WorkerDecommissionWorkflow):
    """Decommission that removes the Hub enrollment before cordoning and draining (reordering commands)."""

    @workflow.run
    async def run(self, params: DecommissionInput) -> DecommissionResult:
        return await super().run(params)

    async def _leave_hub(self, step: EnrollmentStep) -> list[EnsureResult]:
        steps = self.state.steps
        removed = await steps.run(HUB_REMOVE_ENROLLMENT, step)
        await steps.run(HUB_CORDON, Cordon(contract=step.contract, cordoned=True, reason="decommission"))
        await steps.run(WORKER_WAIT_NO_REMOTE_WORK, ConditionWait(contract=step.contract, conditions=[]))
        return removed


class RunWithoutAdoptions(TenantRun):
    """Apply steps no longer given the approved plan's adopt lines, the patch still checked."""

    def approved_adoptions(self, step: Step[StepInput, StepResult]) -> list[PlanStep]:
        super().approved_adoptions(step)
        return []


@workflow.defn(name="TenantOnboarding")
class OnboardingWithoutAdoptions(TenantOnboarding):
    """Onboarding whose ``identity.users`` forgets the approved adoptions (changing an activity's arguments)."""

    def __init__(self) -> None:
        super().__init__()
        self.tenant = RunWithoutAdoptions(self.state)

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)


@workflow.defn(name="TenantOnboarding")
class OnboardingWithOtherRunId(TenantOnboarding):
    """Onboarding whose preflight gets another run id (changing an activity's arguments)."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)

    async def _preflight(self, step_input: StepInput) -> Facts:
        return await super()._preflight(step_input.model_copy(update={"run_id": "another"}))


@workflow.defn(name="WorkerEnrollment")
class EnrollmentWithOtherBudget(WorkerEnrollmentWorkflow):
    """Enrollment whose condition waits get another budget (changing an activity's arguments)."""

    @workflow.run
    async def run(self, params: EnrollmentInput) -> EnrollmentResult:
        return await super().run(params)

    def _wait(self, step: EnrollmentStep, conditions: list[str]) -> ConditionWait:
        wait = super()._wait(step, conditions)
        return wait.model_copy(update={"budget_s": wait.budget_s + 1})


@workflow.defn(name="TenantLifecycle")
class LifecycleNotAnnouncingRenewals(TenantLifecycle):
    """A lifecycle that no longer notifies a renewal (removing a command)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        return await super().run(params)

    async def _announce_renewals(self) -> None:
        self._unannounced = 0


@workflow.defn(name="TenantLifecycle")
class LifecycleNotNotifyingWaitingRenewals(TenantLifecycle):
    """A lifecycle that stopped telling people about a renewal waiting at its gate (removing a local activity)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        return await super().run(params)

    async def _notify_renewal(self) -> None:
        assert self._pending is not None
        self._renewals_notified.append(self._pending.plan_hash)


@workflow.defn(name="TenantLifecycle")
class LifecycleWithOtherNotices(TenantLifecycle):
    """A lifecycle whose notices say something else (changing an activity's arguments)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        return await super().run(params)

    async def _notify(self, kind: NoticeKind, message: str) -> None:
        await super()._notify(kind, f"{message}.")


@workflow.defn(name="TenantLifecycle")
class LifecycleOffboardingTheHeldContract(TenantLifecycle):
    """A lifecycle that offboards the contract it holds again, without reading the latest record (removing the
    wait and the read, its patch still checked)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        return await super().run(params)

    async def _latest_contract(self) -> tuple[TenantContract, list[str], str]:
        return self._contract, [], ""


@workflow.defn(name="TenantOnboarding")
class OnboardingWithExtraLocalRead(TenantOnboarding):
    """Today's onboarding whose lean preflight reads one layer once more, as a local activity, without a patch."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)

    async def _preflight(self, step_input: StepInput) -> Facts:
        facts = await super()._preflight(step_input)
        if self._lean:
            await self.state.steps.run(PREFLIGHT[-1], step_input, local=True)
        return facts


@workflow.defn(name="TenantLifecycle")
class LifecycleWithoutParentCheck(TenantLifecycle):
    """A lifecycle that runs without a parent, no longer refusing one (removing the patch check and the failure)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        if workflow.info().parent is None:
            return LifecycleResult(
                tenant=params.contract.slug, status="expired", term_end=params.term_end, offboarding=""
            )
        return await super().run(params)


@workflow.defn(name="TenantChange")
class ChangeReadingOnceMore(TenantChange):
    """A change whose preflight reads the last layer once more (adding an activity)."""

    @workflow.run
    async def run(self, params: ChangeInput) -> OnboardingResult:
        return await super().run(params)

    async def _preflight(self, step_input: StepInput) -> Facts:
        facts = await super()._preflight(step_input)
        await self.state.steps.run(PREFLIGHT[-1], step_input.model_copy(update={"facts": facts}))
        return facts


@workflow.defn(name="TenantOnboarding")
class OnboardingLabellingFirst(TenantOnboarding):
    """Onboarding as d06ca5d up to today labelled every run without the lean-history marker: ``Gates.label``."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        return await super().run(params)

    def _label(self, slug: str) -> None:
        self.state.gates.label(TENANT_SLUG, slug)
