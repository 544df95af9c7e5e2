"""Human gates: named waits that an operator answers by update or signal.

A gate is opened with a description and the exact commands that answer it; the
run's current details and ``status`` query show both. Waiting is a durable
``wait_condition``: after ``escalate_after`` the gate escalates (a warning in the
log and the ``Stage`` search attribute ends in ``-escalated``) and keeps
waiting; after ``expire_after`` the run fails with ``GateExpired``.

Runs with :data:`GATE_NOTIFY_PATCH` also tell people (``gates.notify``, :mod:`activities.records.gate_notify`:
a Slack-compatible message to the notifier webhook with the commands that answer the gate and the run's link in
the Temporal UI) when the gate opens (``opened``), when it escalates (``escalated``) and, while it still waits,
:data:`DEADLINE_LEAD` before it expires, or halfway from escalation to expiry when that is sooner (``deadline``).

Each notification is a *local* activity (https://docs.temporal.io/local-activity), awaited with a short
:data:`NOTIFY_TIMEOUT` (schedule to close) and :data:`NOTIFY_RETRY`, its failure caught and logged as a warning.
That is the design, not a detail: an earlier attempt (patch ``gate-notifications``, reverted) started a normal
activity and never awaited it; its ``ActivityTaskCompleted`` event could arrive while the speculative workflow task
that carried an ``approve_plan``/``reject_plan`` update was in flight, that task ended the run, the server refused
the completion for its unhandled event and the update failed with ``WorkflowNotReadyFailure``. A local activity
runs inside the workflow task that opens the gate and its result is recorded by that task's own completion (a
marker), so nothing arrives asynchronously: once the gate waits, the only events the run awaits are its timers
and the operator's answer, as before. An answer sent while the notification is being posted is recorded by the
update's handler at once (the gate is open before the notification starts), but the run goes on, and the update's
reply comes, only when the notification has returned or failed (at most :data:`NOTIFY_TIMEOUT`); the escalation
and expiry timers count from the gate's opening, not from the end of the notification. The webhook's
URL is read from the worker's settings inside the activity, never passed (so it is in no history). Runs recorded
before the patch wait without notifying and replay that way; the reverted attempt's id is not reused, so a run
that recorded its (normal-activity) commands cannot replay through this code by mistake.

``Stage`` is the run's phase, upserted only when it changes: the steps of a phase
(``apply:kube.quota``, ``smoke:nccl``) share one value (``apply``, ``smoke``), and
each step stays visible in the current details, the activity's summary and ``status``.
Every upsert is a history event and a visibility write on the server, so :meth:`Gates.label`
skips the tenant or worker attribute the run was started with. Runs recorded before
:data:`STAGE_ON_CHANGE_PATCH` upserted both, and every step, and replay that way.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import Approval, ApprovePlan, GateAnswer, GateNotice, GateState, recorded_approval
    from tenantflow.models.runbook import GATE_NOTIFY

from tenantflow.workflows.patches import Patches
from tenantflow.workflows.search import STAGE

STAGE_ON_CHANGE_PATCH = "stage-upsert-on-change"
GATE_NOTIFY_PATCH = "gate-notifications-local"
"""Runs with it tell people about their gates (``gates.notify`` as a local activity): opened, escalated, the
deadline near."""
DEADLINE_LEAD = timedelta(hours=24)
"""The ``deadline`` notification goes out this long before the gate expires (see :func:`deadline_lead`)."""
NOTIFY_TIMEOUT = timedelta(seconds=30)
"""Schedule to close of one notification, every attempt included: the longest a gate's opening or escalation waits
for its notification (a gate's answer taken meanwhile is not delayed past it)."""
NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=4),
    maximum_attempts=3,
    non_retryable_error_types=["NotFoundError"],
)
"""A notification is tried three times (a worker without the activity: once), then given up and logged."""
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


def opened_notice(gate: GateState, opening: int, escalates_at: datetime | None, expires_at: datetime) -> GateNotice:
    """The notice that this run's ``gate`` opened (its ``opening``-th time), with the commands that answer it."""
    info = workflow.info()
    run = {"workflow_type": info.workflow_type, "workflow_id": info.workflow_id, "run_id": info.run_id}
    shown = gate.model_dump(include={"description", "how_to_answer", "opened_at"})
    times = {"escalates_at": escalates_at, "expires_at": expires_at}
    return GateNotice(event="opened", gate=gate.name, opening=opening, **run, **shown, **times)


async def notify(notice: GateNotice) -> None:
    """Post ``notice`` through ``gates.notify`` as a local activity, bounded by :data:`NOTIFY_TIMEOUT` and
    :data:`NOTIFY_RETRY`; its failure (a webhook refusing or down, a worker without the activity) is only logged, and
    only the run's own cancellation goes through."""
    try:
        await workflow.execute_local_activity(
            GATE_NOTIFY.name,
            notice,
            result_type=GATE_NOTIFY.result,
            start_to_close_timeout=GATE_NOTIFY.timeout,
            schedule_to_close_timeout=NOTIFY_TIMEOUT,
            retry_policy=NOTIFY_RETRY,
            summary=f"notify: {notice.gate} {notice.event}",
        )
    except FailureError as err:  # a local activity's failure comes as its own error, not always in ActivityError
        if is_cancelled_exception(err):
            raise
        cause = err.cause if isinstance(err, ActivityError) and err.cause else err
        workflow.logger.warning("gate %s: the %s notification failed: %s", notice.gate, notice.event, cause)


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
        """:meth:`wait` of runs with :data:`GATE_NOTIFY_PATCH`: the same waits, counted from the gate's opening,
        telling people when the gate opens, when it escalates and :func:`deadline_lead` before it expires."""
        gate = self.open[name]
        self.openings[name] = self.openings.get(name, 0) + 1
        escalates_at, expires_at = gate.opened_at + escalate_after, gate.opened_at + expire_after
        opened = opened_notice(gate, self.openings[name], escalates_at, expires_at)
        await notify(opened)
        if await self._answered(name, escalates_at):
            return self.answers[name]
        self._escalate(name, escalate_after)
        await notify(opened.model_copy(update={"event": "escalated"}))
        expires_at = max(expires_at, escalates_at + timedelta(seconds=1))
        lead = deadline_lead(expires_at - escalates_at)
        if lead is not None:
            if await self._answered(name, expires_at - lead):
                return self.answers[name]
            await notify(opened.model_copy(update={"event": "deadline"}))
        if not await self._answered(name, expires_at):
            raise self._expire(name, expire_after)
        return self.answers[name]

    async def _answered(self, name: str, until: datetime) -> bool:
        """Wait for an answer to ``name`` until ``until`` (workflow time); whether it came. Past ``until``, the
        answers already taken decide, as a zero timeout would."""
        if name in self.answers:
            return True
        left = until - workflow.now()
        if left <= timedelta(0):
            return False
        try:
            await workflow.wait_condition(lambda: name in self.answers, timeout=left)
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
