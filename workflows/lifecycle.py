"""``TenantLifecycle``: the contract's term as a durable timer, one run per tenant (id ``lifecycle/<slug>``).

A completed onboarding starts it (``workflows/term_start.py``) with the term's end: the completion time plus
``capacity.term_days``. It sleeps on timers until each reminder (``reminder_days`` days before the end: the worker's
``TENANTFLOW_TERM_REMINDER_DAYS``, default 30, 7 and 1) and sends a notice (``workflows/term_notices.py``). The
``renew`` update (validated: 1 to 3650 days, refused once the term has ended or while another renewal waits) is a
request: it waits at the run's ``approve_plan`` gate under a hash of its own (``term`` and ``status`` show it, with the
command that answers it), so that under the four-eyes rule someone other than the requester approves it (the worker's
checks ask the run's ``requested_by``); ``reject_plan`` drops it. Since :data:`RENEWAL_NOTIFY_PATCH` a renewal that
starts waiting is notified as every gate's opening is (``gates.notify``, a local activity: the commands that answer it
and the run's UI link; ``workflows/gate_waits.py``); the term's end is its deadline. Approved, it moves the end, is kept
in ``renewals`` and announced, and the run continues as new with the new end (reminders already past for it are skipped;
a renewal still waiting is carried over); it also continues as new when Temporal suggests it. Runs recorded before
:data:`RENEW_GATE_PATCH` moved the end at ``renew`` itself and replay that way. At the end it starts the tenant's gated
``TenantOffboarding`` (``workflows/term_expiry.py``), recorded as started by the lifecycle (memo ``started_by``, patch
:data:`EXPIRY_STARTER_PATCH`), so that under the four-eyes rule any person may approve it. Since
:data:`LATEST_CONTRACT_PATCH` it offboards the contract of the tenant's latest record, after waiting (stage
``term:settling``) while the tenant's onboarding or change runs; what it cannot establish is noted in the teardown plan.
An offboarding that completes before the end signals ``tenant_offboarded`` and the lifecycle ends (``term:offboarded``).
The ``term`` query says where the term stands; ``status`` is the shared run status.

On a versioned worker the lifecycle auto-upgrades (every other type is pinned): it sleeps for months between tasks, so
pinned it would hold its build, across its continue-as-new too, for the whole term; auto-upgrading, its next task (a
timer, ``renew``, ``tenant_offboarded``) and the run it continues as run on the deployment's current build. Every change
to it therefore needs a patch (``workflows/README.md``).

Only an onboarding (or change) starts a lifecycle, as its child, and the Temporal server keeps the parent across
continue-as-new. Since :data:`PARENT_REQUIRED_PATCH` a run without a parent (one any Temporal client started, whose
offboarding at expiry would otherwise be approvable by anyone) fails at once, non-retryable, saying why; and a run
takes a waiting renewal from its input only when it continues an earlier run (the lifecycle's own continue-as-new
carries it; a first run's input is whatever its starter wrote, so its ``requested_by`` proves nothing). Runs recorded
before the patch replay as they ran.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import (
        STARTED_BY_MEMO,
        Approval,
        ApprovePlan,
        GateAnswer,
        RejectPlan,
        Requested,
        recorded_approval,
    )
    from tenantflow.models.lifecycle import (
        OFFBOARDED_SIGNAL,
        LifecycleInput,
        LifecycleResult,
        NoticeKind,
        PendingRenewal,
        Renewal,
        RenewTerm,
        TermNotice,
        TermStatus,
        renew_days_problem,
    )
    from tenantflow.models.offboarding import OffboardingInput
    from tenantflow.models.proofs import proof_fingerprint
    from tenantflow.models.run_ids import offboarding_id
    from tenantflow.models.runbook import REMINDER_DAYS
    from tenantflow.models.status import RunStatus
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.renewal_gate import notify_renewal, renewal_gate
from tenantflow.workflows.search import STAGE, TENANT_SLUG
from tenantflow.workflows.steps import StepTracker
from tenantflow.workflows.term_expiry import latest_contract, settling, start_offboarding
from tenantflow.workflows.term_notices import past_reminders, send_notice, term_notice

RUNNING = "term:running"
EXPIRED = "term:expired"
OFFBOARDED = "term:offboarded"
SETTLING = "term:settling"
"""The status stage while an expired term waits for the tenant's running onboarding or change and reads its record."""
EXPIRY_STARTER_PATCH = "expiry-offboarding-started-by"
"""Runs with it give the offboarding started at expiry the memo ``started_by`` (the lifecycle's workflow id)."""
RENEW_GATE_PATCH = "renew-gated"
"""Runs with it hold a ``renew`` at the ``approve_plan`` gate until another answer approves it."""
LATEST_CONTRACT_PATCH = "expiry-offboards-latest-record"
"""Runs with it, at expiry, wait (bounded) for the tenant's running onboarding or change and offboard the contract
of its latest record; runs without it offboard the contract they were started with."""
PARENT_REQUIRED_PATCH = "lifecycle-parent-required"
"""Runs with it fail at once without a parent workflow, and ignore a waiting renewal in the input of a first run."""
RENEWAL_NOTIFY_PATCH = "renewal-gate-notifications"
"""Runs with it tell people when a renewal starts waiting at ``approve_plan`` (``gates.notify``, a local activity, as
every gate's opening does: ``workflows/gate_waits.py`` says why local); checked once, as the run starts."""
NO_PARENT = "LifecycleWithoutParent"
"""The failure type of a lifecycle run no onboarding or change started."""


@workflow.defn(name="TenantLifecycle")
class TenantLifecycle:
    @workflow.init
    def __init__(self, params: LifecycleInput) -> None:
        self._contract = params.contract
        self._term_end = params.term_end
        self._days = sorted(set(params.reminder_days or []), reverse=True)
        self._done = list(params.reminders_done or [])
        self._renewals = list(params.renewals)
        self._pending = params.pending_renewal
        if (
            self._pending is not None
            and workflow.info().continued_run_id is None
            and workflow.patched(PARENT_REQUIRED_PATCH)
        ):
            workflow.logger.warning("ignored the pending renewal of a first run's input: only a continued run has one")
            self._pending = None
        self._approvals: list[Approval] = []
        self._unannounced = 0
        self._stage = RUNNING
        self._offboarding = ""
        self._settling = ""
        self._notices: list[TermNotice] = []
        self._steps = StepTracker()
        self._steps.target = params.contract.slug
        self._notifies_renewals = False
        self._renewals_notified: list[str] = []
        """The hashes of the renewals this run told people about (with :data:`RENEWAL_NOTIFY_PATCH`)."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        slug = self._contract.slug
        if workflow.info().parent is None and workflow.patched(PARENT_REQUIRED_PATCH):
            raise ApplicationError(
                f"{workflow.info().workflow_id} was started without a parent workflow: a tenant's lifecycle is "
                f"started only by its completed onboarding (as its child), so that the offboarding it starts at the "
                f"term's end is known to come from a real term; onboard {slug} (or `tenantflow renew {slug}` an "
                f"existing term) instead of starting TenantLifecycle directly",
                type=NO_PARENT,
                non_retryable=True,
            )
        self._notifies_renewals = workflow.patched(RENEWAL_NOTIFY_PATCH)
        workflow.upsert_search_attributes([TENANT_SLUG.value_set(slug), STAGE.value_set(RUNNING)])
        if params.reminder_days is None:
            self._days = sorted(set(await self._steps.run(REMINDER_DAYS, slug)), reverse=True)
        if params.reminders_done is None:
            self._done = past_reminders(self._term_end, self._days, workflow.now())
        while True:
            if self._stage == OFFBOARDED:
                workflow.upsert_search_attributes([STAGE.value_set(OFFBOARDED)])
                return self._result(f"{self._offboarding} offboarded {slug} before its term ended")
            if self._unannounced:
                await self._continue_as_new()
            if self._renewal_unnotified():
                await self._notify_renewal()
                continue
            pending = [day for day in self._days if day not in self._done]
            wake = self._term_end - timedelta(days=pending[0]) if pending else self._term_end
            if wake > workflow.now():
                try:
                    await workflow.wait_condition(
                        lambda: self._unannounced > 0 or self._stage == OFFBOARDED or self._renewal_unnotified(),
                        timeout=wake - workflow.now(),
                    )
                    continue
                except TimeoutError:
                    pass
            if not pending:
                return await self._expire()
            self._done.append(pending[0])
            await self._notify(
                "term.reminder",
                f"the term of {slug} ends in {pending[0]} days ({self._term_end:%Y-%m-%d %H:%M}Z); "
                f"extend it with `tenantflow renew {slug} --days N`, else offboarding starts then",
            )
            if workflow.info().is_continue_as_new_suggested():
                await self._continue_as_new()

    @workflow.update(
        name="renew",
        description='Ask to extend the term by days (payload {"days": 90, "approver": "...", "comment": "..."}); '
        "it waits at approve_plan for approval, then reminders start over for the new end",
    )
    def renew(self, request: RenewTerm) -> TermStatus:
        if workflow.patched(RENEW_GATE_PATCH):
            now = workflow.now()
            self._pending = PendingRenewal(
                days=request.days,
                requested_by=request.approver,
                comment=request.comment,
                at=now,
                plan_hash=PendingRenewal.hash_of(request.days, request.approver, now),
                verified_by=proof_fingerprint(request.proof),
            )
            return self.term()
        self._extend(request.days, request.approver, request.comment)
        return self.term()

    def _extend(self, days: int, approver: str, comment: str, requested_by: str = "", verified_by: str = "") -> None:
        """Move the end by ``days`` and record the renewal with the new end, to be announced (``requested_by`` and
        ``verified_by`` for a renewal that waited at the gate)."""
        self._term_end += timedelta(days=days)
        renewal = Renewal(
            days=days,
            approver=approver,
            comment=comment,
            at=workflow.now(),
            term_end=self._term_end,
            requested_by=requested_by,
            verified_by=verified_by,
        )
        self._renewals.append(renewal)
        self._unannounced += 1

    def requested_by(self, gate: str) -> Requested | None:
        """Who asked for what ``gate`` answers, whom the four-eyes rule keeps from approving it: the requester of the
        waiting renewal and the key that proved it, if one did (``worker.approvals`` reads it)."""
        pending = self._pending
        return Requested(pending.requested_by, pending.verified_by) if gate == "approve_plan" and pending else None

    @workflow.update(
        name="approve_plan", description='Approve the waiting renewal by its hash (payload {"plan_hash": "..."})'
    )
    def approve_plan(self, approval: ApprovePlan) -> str:
        pending = self._require_pending(approval.plan_hash)
        self._pending = None
        answer = GateAnswer(approver=approval.approver, comment=approval.comment, proof=approval.proof)
        self._approvals.append(recorded_approval("approve_plan", answer, workflow.now(), pending.plan_hash))
        verified_by = proof_fingerprint(approval.proof)
        self._extend(pending.days, approval.approver, pending.comment, pending.requested_by, verified_by)
        return f"renewal {pending.plan_hash} by {pending.days} days approved by {approval.approver}"

    @approve_plan.validator
    def _validate_approve(self, approval: ApprovePlan) -> None:
        self._require_pending(approval.plan_hash)

    @workflow.update(name="reject_plan", description="Reject the waiting renewal; the term is unchanged")
    def reject_plan(self, rejection: RejectPlan) -> str:
        pending = self._require_pending()
        self._pending = None
        answer = GateAnswer(approver=rejection.approver, comment=rejection.reason, proof=rejection.proof)
        self._approvals.append(recorded_approval("approve_plan", answer, workflow.now(), pending.plan_hash, False))
        return f"renewal {pending.plan_hash} rejected by {rejection.approver}"

    @reject_plan.validator
    def _validate_reject(self, rejection: RejectPlan) -> None:
        self._require_pending()

    def _require_pending(self, plan_hash: str | None = None) -> PendingRenewal:
        """The waiting renewal (with ``plan_hash``, when given); refused without one."""
        if self._pending is None:
            raise ValueError(f"no renewal of {self._contract.slug} waits for approval (see `tenantflow term`)")
        if plan_hash is not None and plan_hash != self._pending.plan_hash:
            raise ValueError(
                f"stale or unknown renewal hash {plan_hash}; the waiting renewal is {self._pending.plan_hash}"
            )
        return self._pending

    @renew.validator
    def _validate_renew(self, request: RenewTerm) -> None:
        problem = renew_days_problem(request.days)
        if problem:
            raise ValueError(problem)
        if self._stage == OFFBOARDED:
            raise ValueError(f"{self._contract.slug} was offboarded by {self._offboarding}; onboard it again first")
        if self._stage != RUNNING:
            raise ValueError(
                f"the term of {self._contract.slug} ended at {self._term_end:%Y-%m-%d %H:%M}Z and offboarding "
                f"{self._offboarding} {'starts shortly' if self._settling else 'was started'}: reject its plan to "
                "keep the tenant, then onboard it again to start a new term"
            )
        if self._pending is not None:
            raise ValueError(
                f"a renewal by {self._pending.days} days asked for by {self._pending.requested_by} waits for approval "
                f"(hash {self._pending.plan_hash}): approve or reject it first"
            )

    @workflow.signal(
        name=OFFBOARDED_SIGNAL,
        description="A completed offboarding of the tenant (argument: its workflow id): the lifecycle ends",
    )
    def tenant_offboarded(self, offboarding: str) -> None:
        if self._stage == RUNNING:
            self._stage, self._offboarding = OFFBOARDED, offboarding

    @workflow.query(name="term", description="The term's end, reminders, renewals and the offboarding started")
    def term(self) -> TermStatus:
        carried = self._carried().model_dump(exclude={"contract"})
        return TermStatus(
            tenant=self._contract.slug,
            stage=self._stage,
            offboarding=self._offboarding,
            notices=self._notices,
            **carried,
        )

    def _carried(self) -> LifecycleInput:
        """What a continue-as-new carries: the contract, the term's end, the reminders (and those done), renewals."""
        return LifecycleInput(
            contract=self._contract,
            term_end=self._term_end,
            reminder_days=self._days,
            reminders_done=self._done,
            renewals=self._renewals,
            pending_renewal=self._pending,
        )

    @workflow.query(
        name="status", description="Stage, steps (the notices sent), when the term ends and a renewal waiting"
    )
    def status(self) -> RunStatus:
        pending = self._pending
        gates = [renewal_gate(pending)] if pending is not None else []
        return RunStatus(
            workflow="TenantLifecycle",
            target=self._contract.slug,
            stage="gate:approve_plan"
            if pending is not None and self._stage == RUNNING
            else SETTLING
            if self._settling
            else self._stage,
            plan_hash=pending.plan_hash if pending else None,
            gates=gates,
            steps=self._steps.records,
            approvals=self._approvals,
            message=self._settling or f"the term ends {self._term_end:%Y-%m-%d %H:%M}Z",
        )

    def _renewal_unnotified(self) -> bool:
        """A renewal waits that this run (with :data:`RENEWAL_NOTIFY_PATCH`) has not told people about yet."""
        pending = self._pending
        return self._notifies_renewals and pending is not None and pending.plan_hash not in self._renewals_notified

    async def _notify_renewal(self) -> None:
        """Tell people that the waiting renewal waits (:func:`workflows.renewal_gate.notify_renewal`)."""
        assert self._pending is not None
        self._renewals_notified.append(self._pending.plan_hash)
        await notify_renewal(self._pending, len(self._renewals_notified), self._term_end)

    async def _announce_renewals(self) -> None:
        """Notify each renewal not announced yet; the reminders start over for the new end."""
        while self._unannounced:
            self._done = past_reminders(self._term_end, self._days, workflow.now())
            self._unannounced -= 1
            renewal = self._renewals[-1 - self._unannounced]
            await self._notify(
                "term.renewed",
                f"the term of {self._contract.slug} was extended by {renewal.days} days by {renewal.approver}; "
                f"it ends {renewal.term_end:%Y-%m-%d %H:%M}Z",
            )

    async def _continue_as_new(self) -> None:
        """Announce what is unannounced and continue as new with the term, reminders sent and renewals."""
        while True:
            await self._announce_renewals()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._unannounced:
                break
        if self._stage == OFFBOARDED:
            return  # offboarded while renewals were announced: the run ends rather than continue
        workflow.continue_as_new(self._carried())

    async def _notify(self, kind: NoticeKind, message: str) -> None:
        notice = term_notice(kind, self._contract.slug, self._term_end, message)
        self._notices.append(notice)
        await send_notice(self._steps, notice)

    async def _expire(self) -> LifecycleResult:
        slug = self._contract.slug
        self._stage = EXPIRED
        workflow.upsert_search_attributes([STAGE.value_set(EXPIRED)])
        self._offboarding = offboarding_id(slug)
        starter = {STARTED_BY_MEMO: workflow.info().workflow_id} if workflow.patched(EXPIRY_STARTER_PATCH) else None
        contract, source = self._contract, ""
        notes: list[str] = []
        if workflow.patched(LATEST_CONTRACT_PATCH):
            contract, notes, source = await self._latest_contract()
        arg = OffboardingInput(contract=contract, notes=notes)
        started = await start_offboarding(slug, self._term_end, self._offboarding, arg, starter, source)
        message = f"the term of {slug} ended; {started}; nothing is removed until its plan is approved"
        message += "".join(f"; {note}" for note in notes)
        await self._notify("term.expired", message)
        return self._result(message)

    async def _latest_contract(self) -> tuple[TenantContract, list[str], str]:
        """The contract to offboard at expiry, the teardown plan's notes and the contract's source
        (:func:`term_expiry.latest_contract`); the status says what it waits for meanwhile."""
        self._settling = settling(self._contract.slug)
        try:
            return await latest_contract(self._steps, self._contract)
        finally:
            self._settling = ""

    def _result(self, message: str) -> LifecycleResult:
        return LifecycleResult(
            tenant=self._contract.slug,
            status=self._stage.removeprefix("term:"),
            term_end=self._term_end,
            offboarding=self._offboarding,
            message=message,
        )
