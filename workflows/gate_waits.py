"""Human gates: named waits that an operator answers by update or signal.

A gate is opened with a description and the exact commands that answer it; the
run's current details and ``status`` query show both. Waiting is a durable
``wait_condition``: after ``escalate_after`` the gate escalates (a warning in the
log and the ``Stage`` search attribute ends in ``-escalated``) and keeps
waiting; after ``expire_after`` the run fails with ``GateExpired``.

``Stage`` is the run's phase, upserted only when it changes: the steps of a phase
(``apply:kube.quota``, ``smoke:nccl``) share one value (``apply``, ``smoke``), and
each step stays visible in the current details, the activity's summary and ``status``.
Every upsert is a history event and a visibility write on the server, so :meth:`Gates.label`
skips the tenant or worker attribute the run was started with. Runs recorded before
:data:`STAGE_ON_CHANGE_PATCH` upserted both, and every step, and replay that way.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import Approval, ApprovePlan, GateAnswer, GateState, recorded_approval

from tenantflow.workflows.patches import Patches
from tenantflow.workflows.search import STAGE

STAGE_ON_CHANGE_PATCH = "stage-upsert-on-change"
PER_STEP_PHASES = ("apply", "smoke")
"""Phases whose stage names the step (``apply:<step>``); ``Stage`` shows only the phase."""


def phase_of(stage: str) -> str:
    """The ``Stage`` search attribute's value for ``stage``: its phase when the stage names a step of it."""
    phase, sep, _ = stage.partition(":")
    return phase if sep and phase in PER_STEP_PHASES else stage


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
        try:
            await workflow.wait_condition(lambda: name in self.answers, timeout=escalate_after)
        except TimeoutError:
            workflow.logger.warning("gate %s escalated: no answer after %s", name, escalate_after)
            self.open[name] = self.open[name].model_copy(update={"escalated": True})
            self.set_stage(
                f"gate:{name}-escalated",
                self.details(f"**ESCALATED**: still waiting for `{name}`: {description}", how_to_answer),
            )
            remaining = expire_after - escalate_after
            try:
                await workflow.wait_condition(
                    lambda: name in self.answers, timeout=max(remaining, timedelta(seconds=1))
                )
            except TimeoutError:
                self.open.pop(name, None)
                raise ApplicationError(
                    f"gate {name} expired after {expire_after} without an answer",
                    type="GateExpired",
                    non_retryable=True,
                ) from None
        return self.answers[name]
