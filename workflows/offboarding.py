"""``TenantOffboarding``: tear a finished tenant down the way a failed onboarding is rolled back.

It reads every layer (the onboarding plan of the tenant: what exists is
``unchanged``), publishes a teardown plan and waits for ``approve_plan``. Weka
data (organization, filesystems, quotas) is kept unless ``purge_data`` is set and
confirmed at the ``confirm_purge`` gate. Right before the first removal every layer
is read again; if the teardown plan changed, ``approve_plan`` opens again with
the new plan and what changed. The teardown then runs the layers'
``undo`` activities in the runbook's rollback order (Slurm, Kubernetes,
Reservation, Weka, Authentik last; users are deactivated, not deleted). An undo
that keeps failing stops the teardown at the ``retry_rollback`` gate with the
objects left in ``status`` (``workflows/rollback.py``). Runs with :data:`DRAIN_PATCH` drain Slurm first: the
plan lists the running and pending jobs of the tenant's accounts (``slurm.jobs``, one ``delete`` line of kind
``job`` each), and right before the first removal ``slurm.cancel_jobs`` cancels them and waits until none is left
(sacctmgr refuses to delete an account with active jobs); a job submitted after the plan is cancelled too and
named in the result's message. The tenant's record gets a
last version with the status ``offboarded``, and the tenant's lifecycle (the term's timer,
``workflows/lifecycle.py``), if one runs, is told so and ends (runs recorded with :data:`END_TERM_PATCH`). What its
starter could not establish (``OffboardingInput.notes``: the lifecycle at expiry) heads the teardown plan's notes.
Before it reads, the run holds the tenant (``workflows/tenant_hold.py``, runs with :data:`HOLD_PATCH`): while the
tenant's onboarding or change holds it, an offboarding ends, and the one the lifecycle starts at expiry waits.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import OFFBOARDED_SIGNAL
    from tenantflow.models.offboarding import JOB_KIND, JobsToCancel, OffboardingInput, OffboardingResult
    from tenantflow.models.onboarding import StepInput
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.records import RecordStatus, TenantRecord
    from tenantflow.models.results import EnsureResult, Finding
    from tenantflow.models.run_ids import lifecycle_id
    from tenantflow.models.runbook import (
        APPLY,
        CAPACITY,
        DATA_STEPS,
        PLAN,
        RECORD_TENANT,
        SLURM_CANCEL_JOBS,
        SLURM_JOBS,
    )

from tenantflow.workflows.gate_handlers import GatedWorkflow, yes_no_gate
from tenantflow.workflows.records import TENANT_RECORD_PATCH, Records
from tenantflow.workflows.rollback import RETRY_ROLLBACK, Rollback, retry_rollback_gate
from tenantflow.workflows.saga import Saga, undo_steps
from tenantflow.workflows.search import TENANT_SLUG
from tenantflow.workflows.tenant_hold import HOLD_PATCH, claim

PRESENT = (Action.unchanged, Action.update)
END_TERM_PATCH = "offboarding-ends-term"
"""Histories recorded before a completed offboarding ended the tenant's lifecycle replay without it."""
DRAIN_PATCH = "offboarding-cancels-jobs"
"""Histories recorded before the offboarding listed and cancelled the tenant's Slurm jobs replay without it."""


def jobs_note(jobs: list[PlanStep]) -> list[str]:
    """The teardown plan's note on the tenant's jobs (none when it has none)."""
    if not jobs:
        return []
    return [f"{len(jobs)} running or pending Slurm job(s) of the tenant are cancelled (scancel) and awaited first"]


def teardown_plan(
    slug: str,
    onboarding_plan: list[PlanStep],
    purge_data: bool,
    notes: list[str] | None = None,
    jobs: list[PlanStep] | None = None,
) -> Plan:
    """Every existing object of the tenant, marked delete, or leave for data kept, after the tenant's ``jobs`` to
    cancel; ``notes`` (the starter's) first."""
    steps: list[PlanStep] = list(jobs or [])
    for step in APPLY:
        keep = step in DATA_STEPS and not purge_data
        for entry in onboarding_plan:
            if entry.layer == step.layer and entry.kind in step.kinds and entry.action in PRESENT:
                steps.append(
                    entry.model_copy(
                        update={
                            "action": Action.leave if keep else Action.delete,
                            "detail": {**entry.detail, "step": step.name},
                        }
                    )
                )
    kept = [] if purge_data else ["Weka organization, filesystems and quotas are kept (purge_data not set)"]
    return Plan(title=f"Offboard {slug}", steps=steps, notes=[*(notes or []), *jobs_note(jobs or []), *kept])


@workflow.defn(name="TenantOffboarding")
class TenantOffboarding(GatedWorkflow):
    WORKFLOW = "TenantOffboarding"
    YES_NO_GATES = ("confirm_purge", RETRY_ROLLBACK)
    confirm_purge, confirm_purge_signal = yes_no_gate(
        "confirm_purge", "Confirm permanently deleting the tenant's Weka organization, filesystems and quotas"
    )
    retry_rollback, retry_rollback_signal = retry_rollback_gate()

    def __init__(self) -> None:
        super().__init__()
        self.records = Records(self.state)
        self.rollback = Rollback(self.state)
        self._late_jobs: list[Finding] = []

    @workflow.run
    async def run(self, params: OffboardingInput) -> OffboardingResult:
        state = self.state
        contract = params.contract
        state.target = contract.slug
        state.gates.label(TENANT_SLUG, contract.slug)
        escalate = timedelta(seconds=params.approval_escalate_after_s)
        expire = timedelta(days=7)

        self._params = params
        if workflow.patched(HOLD_PATCH):
            parent = workflow.info().parent
            await claim(
                state, contract.slug, wait=parent is not None and parent.workflow_id == lifecycle_id(contract.slug)
            )
        plan = await self._read()
        approved = await state.wait_plan_approval(plan, escalate, expire)
        if approved and params.purge_data:
            await self._confirm_purge(contract.slug, escalate, expire)
        if approved:
            approved, plan = await state.reapprove_if_changed(plan, self._read, escalate, expire)
        if not approved:
            state.gates.set_stage("rejected", "The teardown plan was rejected; nothing was removed")
            return OffboardingResult(
                slug=contract.slug,
                status="rejected",
                plan=plan,
                approvals=state.gates.approvals,
                message=f"rejected: {state.rejected.reason if state.rejected else ''}",
            )
        step_input = self._step_input

        cancelled = await self._cancel_jobs(plan) if workflow.patched(DRAIN_PATCH) else []
        saga = Saga()
        for step in APPLY:
            saga.push(
                step, [], [p for p in plan.steps if p.detail.get("step") == step.name and p.action is Action.delete]
            )
        state.gates.set_stage("tearing-down", f"Removing {len(plan.writes())} objects in rollback order")
        removed = await self.rollback.roll_back(saga, undo_steps(contract, step_input.facts), escalate, expire)
        if workflow.patched(TENANT_RECORD_PATCH):
            record = TenantRecord(contract=contract, run=self.records.stamp(), status=RecordStatus.offboarded)
            await self.records.store(RECORD_TENANT, record)
        if workflow.patched(END_TERM_PATCH):
            await self._end_term(contract.slug)
        state.gates.set_stage("completed", f"Tenant {contract.slug} offboarded")
        return OffboardingResult(
            slug=contract.slug,
            status="completed",
            plan=plan,
            removed=[*cancelled, *removed],
            kept=[p for p in plan.steps if p.action is Action.leave],
            approvals=state.gates.approvals,
            message="; ".join(f.message for f in self._late_jobs),
        )

    async def _confirm_purge(self, slug: str, escalate: timedelta, expire: timedelta) -> None:
        """Wait at ``confirm_purge`` before the Weka data goes too."""
        await self.state.wait_gate("confirm_purge", f"permanently delete the Weka data of {slug}", escalate, expire)

    async def _cancel_jobs(self, plan: Plan) -> list[EnsureResult]:
        """Cancel the tenant's Slurm jobs and wait until none is left, before anything is removed; the jobs the plan
        did not list (submitted after it was read) are cancelled too and kept for the result's message."""
        planned = [p.name for p in plan.steps if p.layer == SLURM_JOBS.layer and p.kind == JOB_KIND]
        self.state.gates.set_stage("cancelling-jobs", f"Cancelling the tenant's Slurm jobs ({len(planned)} planned)")
        done = await self.state.steps.run(
            SLURM_CANCEL_JOBS, JobsToCancel(contract=self._params.contract, planned=planned)
        )
        self._late_jobs = done.findings
        self.state.findings += done.findings
        return done.results

    async def _end_term(self, slug: str) -> None:
        """Tell the tenant's lifecycle it was offboarded; none runs when it started this offboarding at expiry."""
        try:
            await workflow.get_external_workflow_handle(lifecycle_id(slug)).signal(
                OFFBOARDED_SIGNAL, workflow.info().workflow_id
            )
        except FailureError as err:
            workflow.logger.info("no lifecycle of %s to end: %s", slug, err)

    async def _read(self) -> Plan:
        """Read every layer of the tenant (nothing is written) and make the teardown plan of what exists."""
        contract = self._params.contract
        steps = self.state.steps
        self.state.gates.set_stage("reading", "Reading every layer of the tenant; nothing is written before approval")
        step_input = StepInput(contract=contract, run_id=workflow.info().workflow_id)
        census = await steps.run(CAPACITY.preflight, step_input, summary="capacity: find the tenant's nodes")
        step_input = self._step_input = step_input.model_copy(update={"facts": census.facts})
        present: list[PlanStep] = []
        for read in PLAN:
            present += await steps.run(read, step_input, summary=f"{read.layer}: read")
        jobs = await steps.run(SLURM_JOBS, step_input) if workflow.patched(DRAIN_PATCH) else []
        return teardown_plan(contract.slug, present, self._params.purge_data, self._params.notes, jobs)
