"""The handlers every gated run shares, written once: approve or reject its plan by hash, yes/no gates, ``status``.

A gated workflow class inherits :class:`GatedWorkflow` (one level), sets ``WORKFLOW`` and ``YES_NO_GATES`` and
calls ``super().__init__()`` in its ``__init__``, which builds the run's :class:`RunState` as ``self.state``; every
handler delegates to it. A handler whose text differs per workflow (what the UI shows, what approve_plan answers) is
made by a function here that the class binds once with its own text, for example
``approve_plan = approve_plan_update("Approve the decommission plan ...", answer="reset plan {plan_hash} approved")``;
the base class binds the default text. Every yes/no gate is an update of its own name with one JSON argument
(a :class:`GateAnswer`) and a signal ``<gate>_signal``, bound with :func:`yes_no_gate`
(``confirm_purge, confirm_purge_signal = yes_no_gate("confirm_purge", "...")``); ``answer_gate`` (two arguments)
stays for older clients.

The handler functions made here leave ``self`` unannotated: temporalio takes an annotated first parameter for the
payload's (hence their ``type: ignore[no-untyped-def]``); the handlers' types name ``Any`` for the workflow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.workflow import UpdateMethodMultiParam

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
    from tenantflow.models.status import RunStatus

from tenantflow.workflows.run_state import PLAN_APPROVED, RunState

APPROVE_PLAN = 'Approve the published plan by its exact hash (payload {"plan_hash": "..."})'
APPROVE_PLAN_SIGNAL = "Signal form of approve_plan (a stale hash is ignored)"
ANSWER_GATE = 'Older form of the gate updates: args [gate, {"approver": "..."}]; prefer the update named for the gate'
STATUS = "Stage, plan, open gates with how to answer, steps and findings"
GATE_ANSWER_FIELDS = 'payload {"approver": "...", "comment": "..."}, both optional'

ApprovePlanUpdate = UpdateMethodMultiParam[[Any, ApprovePlan], Awaitable[str]]
AnswerGateUpdate = UpdateMethodMultiParam[[Any, str, GateAnswer], Awaitable[str]]
GateUpdate = UpdateMethodMultiParam[[Any, GateAnswer], Awaitable[str]]
GateSignal = Callable[[Any, GateAnswer], None]


def approve_plan_update(description: str, answer: str = PLAN_APPROVED) -> ApprovePlanUpdate:
    """The ``approve_plan`` update described by ``description``, answering ``answer`` (``str.format`` with
    ``plan_hash`` and ``approver``); refused unless the gate is open and the hash is the current plan's."""

    async def approve_plan(self, approval: ApprovePlan) -> str:  # type: ignore[no-untyped-def]
        return str(self.state.approve(approval, answer))

    def validate(self, approval: ApprovePlan) -> None:  # type: ignore[no-untyped-def]
        self.state.validate_approval(approval)

    update = workflow.update(name="approve_plan", description=description)(approve_plan)
    update.validator(validate)
    return update


def approve_plan_signal_handler(description: str = APPROVE_PLAN_SIGNAL) -> Callable[[Any, ApprovePlan], None]:
    """The ``approve_plan_signal`` signal described by ``description`` (a stale hash is ignored with a warning)."""

    def by_signal(self, approval: ApprovePlan) -> None:  # type: ignore[no-untyped-def]
        self.state.approve_by_signal(approval)

    return workflow.signal(name="approve_plan_signal", description=description)(by_signal)


def answer_gate_update(
    description: str = ANSWER_GATE,
) -> UpdateMethodMultiParam[[Any, str, GateAnswer], Awaitable[str]]:
    """The ``answer_gate`` update (args: gate, answer) described by ``description``."""

    async def answer_gate(self, name: str, answer: GateAnswer) -> str:  # type: ignore[no-untyped-def]
        return str(self.state.answer(name, answer))

    def validate(self, name: str, answer: GateAnswer) -> None:  # type: ignore[no-untyped-def]
        self.state.validate_answer(name, answer)

    update = workflow.update(name="answer_gate", description=description)(answer_gate)
    update.validator(validate)
    return update


def status_query(description: str = STATUS) -> Callable[[Any], RunStatus]:
    """The ``status`` query described by ``description``: the run's :class:`RunStatus`."""

    def status(self) -> RunStatus:  # type: ignore[no-untyped-def]
        run_status: RunStatus = self.state.status()
        return run_status

    return workflow.query(name="status", description=description)(status)


def yes_no_gate(
    gate: str, description: str, payload: type[GateAnswer] = GateAnswer, fields: str = GATE_ANSWER_FIELDS
) -> tuple[GateUpdate, GateSignal]:
    """The update ``gate`` (one ``payload`` argument, a :class:`GateAnswer` or a model extending it, refused unless
    the gate is open and the run's check of the gate takes it, :attr:`RunState.answer_checks`) and the signal
    ``<gate>_signal`` (ignored unless so), both described by ``description`` and the payload's ``fields`` for the
    UI."""

    async def answer(self, answer: GateAnswer) -> str:  # type: ignore[no-untyped-def]
        return str(self.state.answer(gate, answer))

    def validate(self, answer: GateAnswer) -> None:  # type: ignore[no-untyped-def]
        self.state.check_answer(gate, answer)

    def by_signal(self, answer: GateAnswer) -> None:  # type: ignore[no-untyped-def]
        self.state.answer_by_signal(gate, answer)

    for handler in (answer, validate, by_signal):  # temporalio decodes the argument as its annotated type
        handler.__annotations__["answer"] = payload
    update = workflow.update(name=gate, description=f"{description} ({fields})")(answer)
    update.validator(validate)
    signal = workflow.signal(name=f"{gate}_signal", description=f"Signal form of {gate} (ignored unless open)")
    return update, signal(by_signal)


class GatedWorkflow:
    """The base of a gated workflow: its :class:`RunState` and the handlers every gated run has."""

    WORKFLOW: ClassVar[str]
    YES_NO_GATES: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.state = RunState(self.WORKFLOW, self.YES_NO_GATES)

    approve_plan = approve_plan_update(APPROVE_PLAN)
    approve_plan_signal = approve_plan_signal_handler()
    answer_gate = answer_gate_update()
    status = status_query()

    @workflow.update(name="reject_plan", description="Reject the published plan; the run ends, nothing written")
    async def reject_plan(self, rejection: RejectPlan) -> str:
        return self.state.reject(rejection)

    @reject_plan.validator
    def _validate_reject(self, rejection: RejectPlan) -> None:
        self.state.gates.require_open("approve_plan")

    @workflow.signal(name="answer_gate_signal", description="Signal form of answer_gate (ignored unless open)")
    def answer_gate_signal(self, name: str, answer: GateAnswer) -> None:
        if name in self.state.yes_no_gates:
            self.state.answer_by_signal(name, answer)
        else:
            workflow.logger.warning("ignored signal for %s, not a yes/no gate", name)
