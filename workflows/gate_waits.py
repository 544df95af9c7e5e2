"""Human gates: named waits that an operator answers by update or signal.

A gate is opened with a description and the exact commands that answer it; the
run's current details and ``status`` query show both. Waiting is a durable
``wait_condition``: after ``escalate_after`` the gate escalates (a warning in the
log and the ``Stage`` search attribute ends in ``-escalated``) and keeps
waiting; after ``expire_after`` the run fails with ``GateExpired``.

Runs with :data:`GATE_NOTIFY_PATCH` also tell people (``gates.notify``, :mod:`activities.records.gate_notify`:
a Slack-compatible message to the notifier webhook with the commands and the run's link in the Temporal UI) when
the gate opens (``opened``), when it escalates (``escalated``) and, while it still waits, :data:`DEADLINE_LEAD` before
it expires, or halfway from escalation to expiry when that is sooner (``deadline``: with the default 1 h and 7 days,
six days after it opened). The activity is started and not awaited: the gate waits the same whether the
notification is delivered, refused or never picked up, and a failure only logs a warning. Runs recorded before the
patch wait without notifying and replay that way.

``Stage`` is the run's phase, upserted only when it changes: the steps of a phase
(``apply:kube.quota``, ``smoke:nccl``) share one value (``apply``, ``smoke``), and
each step stays visible in the current details, the activity's summary and ``status``.
Every upsert is a history event and a visibility write on the server, so :meth:`Gates.label`
skips the tenant or worker attribute the run was started with. Runs recorded before
:data:`STAGE_ON_CHANGE_PATCH` upserted both, and every step, and replay that way.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import Approval, ApprovePlan, GateAnswer, GateNotice, GateState, recorded_approval
    from tenantflow.models.lifecycle import NoticeSent
    from tenantflow.models.runbook import GATE_NOTIFY

from tenantflow.workflows.patches import Patches
from tenantflow.workflows.search import STAGE

STAGE_ON_CHANGE_PATCH = "stage-upsert-on-change"
GATE_NOTIFY_PATCH = "gate-notifications"
"""Runs with it tell people about their gates (``gates.notify``): opened, escalated, and the deadline near."""
DEADLINE_LEAD = timedelta(hours=24)
"""The ``deadline`` notification goes out this long before the gate expires (see :func:`deadline_lead`)."""
NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)
"""A notification is tried five times (about a quarter of a minute), then given up and logged."""
PER_STEP_PHASES = ("apply", "smoke")
"""Phases whose stage names the step (``apply:<step>``); ``Stage`` shows only the phase."""


def phase_of(stage: str) -> str:
    """The ``Stage`` search attribute's value for ``stage``: its phase when the stage names a step of it."""
    phase, sep, _ = stage.partition(":")
    return phase if sep and phase in PER_STEP_PHASES else stage


def deadline_lead(remaining: timedelta) -> timedelta | None:
    """How long before expiry the ``deadline`` notification goes out, when the gate escalated ``remaining`` before
    it: :data:`DEADLINE_LEAD`, or half of ``remaining`` when that is shorter; None below a second (expiry follows
    escalation too closely for a notification between them)."""
    lead = min(DEADLINE_LEAD, remaining / 2)
    return lead if lead >= timedelta(seconds=1) else None


def notify(notice: GateNotice) -> None:
    """Start ``gates.notify`` for ``notice`` and go on: the gate never waits for it, and its failure (a webhook
    refusing, no worker with the activity: :data:`NOTIFY_RETRY` bounds the attempts) is only logged."""
    handle = workflow.start_activity(
        GATE_NOTIFY.name,
        notice,
        result_type=GATE_NOTIFY.result,
        start_to_close_timeout=GATE_NOTIFY.timeout,
        retry_policy=NOTIFY_RETRY,
        cancellation_type=ActivityCancellationType.ABANDON,
        summary=f"notify: {notice.gate} {notice.event}",
    )

    def delivered(done: asyncio.Future[NoticeSent]) -> None:
        if done.cancelled():
            return
        err = done.exception()
        if err is not None:
            cause = err.cause if isinstance(err, ActivityError) and err.cause else err
            workflow.logger.warning("gate %s: the %s notification failed: %s", notice.gate, notice.event, cause)

    handle.add_done_callback(delivered)


def answer_of(approval: ApprovePlan) -> GateAnswer:
    """The gate answer an ``approve_plan`` payload gives (its approver, comment and proof)."""
    return GateAnswer(approver=approval.approver, comment=approval.comment, proof=approval.proof)


class Gates:
    """The open gates of one run and the answers received."""

    def __init__(self, patches: Patches) -> None:
        self.patches = patches
        self.open: dict[str, GateState] = {}
        self.answers: dict[str, GateAnswer] = {}
        self.approvals: list[Approval] = []
        self.stage = "starting"
        self.searchable: str | None = None
        """The ``Stage`` value last upserted by this run."""
        self.openings: dict[str, int] = {}
        """How many times each gate has opened in this run (with :data:`GATE_NOTIFY_PATCH`)."""

    def label(self, key: SearchAttributeKey[str], value: str) -> None:
        """Make the run findable by ``key`` = ``value``; no upsert when it was started with it (the starter's
        runs are)."""
        if not self.patches.has(STAGE_ON_CHANGE_PATCH) or workflow.info().typed_search_attributes.get(key) != value:
            workflow.upsert_search_attributes([key.value_set(value)])

    def set_stage(self, stage: str, details: str) -> None:
        """``stage`` in ``status`` and ``details`` in the UI; ``Stage`` upserted when the phase changes."""
        self.stage = stage
        if not self.patches.has(STAGE_ON_CHANGE_PATCH):
            workflow.upsert_search_attributes([STAGE.value_set(stage)])
        elif phase_of(stage) != self.searchable:
            self.searchable = phase_of(stage)
            workflow.upsert_search_attributes([STAGE.value_set(self.searchable)])
        workflow.set_current_details(details)

    def answer(self, name: str, answer: GateAnswer, plan_hash: str | None = None, approved: bool = True) -> None:
        """Record ``answer`` to gate ``name`` (who gave it, verified or declared, when, for which plan) and close
        the gate."""
        self.answers[name] = answer
        self.open.pop(name, None)
        self.approvals.append(recorded_approval(name, answer, workflow.now(), plan_hash, approved))

    def approve_by_signal(self, plan_hash: str | None, approval: ApprovePlan) -> None:
        """The signal form of ``approve_plan``: answer only an open gate with the current hash, else warn."""
        if "approve_plan" in self.open and plan_hash is not None and approval.plan_hash == plan_hash:
            self.answer("approve_plan", answer_of(approval), plan_hash)
        else:
            workflow.logger.warning("ignored approve_plan signal with hash %s", approval.plan_hash)

    def require_open(self, name: str) -> None:
        """Validator helper: refuse an answer to a gate that is not waiting."""
        if name not in self.open:
            waiting = ", ".join(sorted(self.open)) or "none"
            raise ValueError(f"gate {name!r} is not open (stage {self.stage!r}; open gates: {waiting})")

    @staticmethod
    def details(headline: str, how_to_answer: list[str], intro: str = "Answer with one of:") -> str:
        """Current details in Markdown that the UI shows verbatim: each command, and each payload after its
        "... with", in a fenced code block and the 'name' it goes to as a code span (plain Markdown turns ``--``
        into a dash and quotes into curly ones)."""
        lines = [headline, "", intro]
        for how in how_to_answer:
            lead, sep, payload = how.partition(" with ")
            if sep and payload[:1] in "{[":
                lines += ["", lead.replace("'", "`") + sep.rstrip() + ":", "", "```", payload, "```"]
            else:
                lines += ["", "```", how, "```"]
        return "\n".join(lines)

    async def wait(
        self,
        name: str,
        description: str,
        how_to_answer: list[str],
        *,
        escalate_after: timedelta,
        expire_after: timedelta,
    ) -> GateAnswer:
        self.answers.pop(name, None)  # a gate opened again (a changed plan, another retry) needs a new answer
        self.open[name] = GateState(
            name=name, description=description, opened_at=workflow.now(), how_to_answer=how_to_answer
        )
        self.set_stage(f"gate:{name}", self.details(f"Waiting for `{name}`: {description}", how_to_answer))
        if self.patches.has(GATE_NOTIFY_PATCH):
            return await self._wait_notifying(name, escalate_after, expire_after)
        try:
            await workflow.wait_condition(lambda: name in self.answers, timeout=escalate_after)
        except TimeoutError:
            self._escalate(name, escalate_after)
            remaining = expire_after - escalate_after
            try:
                await workflow.wait_condition(
                    lambda: name in self.answers, timeout=max(remaining, timedelta(seconds=1))
                )
            except TimeoutError:
                raise self._expire(name, expire_after) from None
        return self.answers[name]

    async def _wait_notifying(self, name: str, escalate_after: timedelta, expire_after: timedelta) -> GateAnswer:
        """:meth:`wait` of runs with :data:`GATE_NOTIFY_PATCH`: the same waits, telling people through
        ``gates.notify`` when the gate opens, when it escalates and :func:`deadline_lead` before it expires."""
        gate = self.open[name]
        self.openings[name] = self.openings.get(name, 0) + 1
        info = workflow.info()
        opened = GateNotice(
            event="opened",
            workflow_type=info.workflow_type,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            gate=name,
            opening=self.openings[name],
            description=gate.description,
            how_to_answer=gate.how_to_answer,
            opened_at=gate.opened_at,
            escalates_at=gate.opened_at + escalate_after,
            expires_at=gate.opened_at + expire_after,
        )
        notify(opened)
        if await self._answered(name, escalate_after):
            return self.answers[name]
        self._escalate(name, escalate_after)
        notify(opened.model_copy(update={"event": "escalated"}))
        remaining = max(expire_after - escalate_after, timedelta(seconds=1))
        lead = deadline_lead(remaining)
        if lead is not None:
            if await self._answered(name, remaining - lead):
                return self.answers[name]
            notify(opened.model_copy(update={"event": "deadline"}))
            remaining = lead
        if not await self._answered(name, remaining):
            raise self._expire(name, expire_after)
        return self.answers[name]

    async def _answered(self, name: str, within: timedelta) -> bool:
        """Wait at most ``within`` for an answer to ``name``; whether it came."""
        try:
            await workflow.wait_condition(lambda: name in self.answers, timeout=within)
        except TimeoutError:
            return False
        return True

    def _escalate(self, name: str, escalate_after: timedelta) -> None:
        workflow.logger.warning("gate %s escalated: no answer after %s", name, escalate_after)
        gate = self.open[name] = self.open[name].model_copy(update={"escalated": True})
        self.set_stage(
            f"gate:{name}-escalated",
            self.details(f"**ESCALATED**: still waiting for `{name}`: {gate.description}", gate.how_to_answer),
        )

    def _expire(self, name: str, expire_after: timedelta) -> ApplicationError:
        self.open.pop(name, None)
        return ApplicationError(
            f"gate {name} expired after {expire_after} without an answer", type="GateExpired", non_retryable=True
        )
