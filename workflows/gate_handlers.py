"""The handlers every gated run shares: approve or reject its plan by hash, answer yes/no gates, ``status``.

A workflow class inherits :class:`GatedRun`, sets ``WORKFLOW`` and ``YES_NO_GATES``
and calls :meth:`GatedRun._init_gated` in ``__init__``; Temporal collects the
handlers from the base class. Every yes/no gate is an update of its own name with
one JSON argument (a :class:`GateAnswer`) and a signal ``<gate>_signal``: the class
declares them with :func:`yes_no_gate` (``confirm_purge, confirm_purge_signal =
yes_no_gate("confirm_purge", "...")``); ``answer_gate`` (two arguments) stays for
older clients. A workflow that shows another description for a
handler (what the UI shows) declares that handler itself with the same name and
``workflow.update``/``signal``/``query``'s ``description=``, delegating to the
shared method (``_approve``, ``_answer``, ``_run_status`` ...) and, for an update,
reusing the shared validator (an update's type names its class, hence the
``type: ignore[override]`` there); ``PLAN_APPROVED`` is the approve_plan answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
    from tenantflow.models.plan import Plan, plan_changes
    from tenantflow.models.results import Finding
    from tenantflow.models.rollback import Leftover
    from tenantflow.models.status import RunStatus

from tenantflow.workflows.gate_waits import Gates
from tenantflow.workflows.patches import Patches
from tenantflow.workflows.steps import StepTracker

REPLAN_PATCH = "replan-before-apply"
"""Histories recorded before approval was bound to a fresh read-only plan replay without it."""


class GatedRun:
    WORKFLOW: ClassVar[str]
    YES_NO_GATES: ClassVar[tuple[str, ...]] = ()
    PLAN_APPROVED: ClassVar[str] = "plan {plan_hash} approved by {approver}"
    """What approve_plan answers (``str.format`` with ``plan_hash`` and ``approver``)."""

    def _init_gated(self) -> None:
        self._patches = Patches()
        self._gates = Gates(self._patches)
        self._steps = StepTracker()
        self._plan: Plan | None = None
        self._findings: list[Finding] = []
        self._rejected: RejectPlan | None = None
        self._target = ""
        self._leftovers: list[Leftover] = []

    async def _wait_plan_approval(
        self, plan: Plan, escalate_after: timedelta, expire_after: timedelta, changes: list[str] | None = None
    ) -> bool:
        """Publish ``plan`` and wait for approve_plan or reject_plan; True when approved. ``changes``: how it differs
        from a plan approved earlier (the gate reopened because the world changed before apply)."""
        self._plan = plan
        self._rejected = None
        wid = workflow.info().workflow_id
        changed = f"; CHANGED since the last approval: {', '.join(changes)}" if changes else ""
        await self._gates.wait(
            "approve_plan",
            f"approve plan {plan.plan_hash} ({len(plan.writes())} writes){changed}",
            [
                f"tenantflow approve {wid} --plan-hash {plan.plan_hash}",
                f"tenantflow reject {wid} --reason '...'",
                f'Temporal UI: Update \'approve_plan\' with {{"plan_hash": "{plan.plan_hash}"}}',
            ],
            escalate_after=escalate_after,
            expire_after=expire_after,
        )
        return self._rejected is None

    async def _reapprove_if_changed(
        self, plan: Plan, replan: Callable[[], Awaitable[Plan]], escalate_after: timedelta, expire_after: timedelta
    ) -> tuple[bool, Plan]:
        """Right before the first write, plan again (read-only): while the plan differs from the approved one,
        ``approve_plan`` opens again with the new plan and what changed. (approved, the plan to apply)."""
        approved = True
        while approved and self._patches.has(REPLAN_PATCH):
            current = await replan()
            if current.plan_hash == plan.plan_hash:
                break
            approved = await self._wait_plan_approval(
                current, escalate_after, expire_after, plan_changes(plan, current)
            )
            plan = current
        return approved, plan

    async def _wait_gate(
        self, name: str, description: str, escalate_after: timedelta, expire_after: timedelta
    ) -> GateAnswer:
        wid = workflow.info().workflow_id
        how = [
            f"tenantflow {name.replace('_', '-')} {wid}",
            f'temporal workflow update execute --workflow-id {wid} --name {name} --input \'{{"approver": "you"}}\'',
            f'Temporal UI: Update \'{name}\' with {{"approver": "you"}}',
        ]
        return await self._gates.wait(name, description, how, escalate_after=escalate_after, expire_after=expire_after)

    @workflow.update(
        name="approve_plan", description='Approve the published plan by its exact hash (payload {"plan_hash": "..."})'
    )
    async def approve_plan(self, approval: ApprovePlan) -> str:
        return self._approve(approval)

    def _approve(self, approval: ApprovePlan) -> str:
        self._gates.answer(
            "approve_plan", GateAnswer(approver=approval.approver, comment=approval.comment), approval.plan_hash
        )
        return self.PLAN_APPROVED.format(plan_hash=approval.plan_hash, approver=approval.approver)

    @approve_plan.validator
    def _validate_approve(self, approval: ApprovePlan) -> None:
        self._gates.require_open("approve_plan")
        current = self._plan.plan_hash if self._plan else None
        if approval.plan_hash != current:
            raise ValueError(
                f"stale or unknown plan hash {approval.plan_hash}; the current plan is {current} "
                "(see `tenantflow status`)"
            )

    @workflow.update(name="reject_plan", description="Reject the published plan; the run ends, nothing written")
    async def reject_plan(self, rejection: RejectPlan) -> str:
        self._rejected = rejection
        self._gates.answer(
            "approve_plan",
            GateAnswer(approver=rejection.approver, comment=rejection.reason),
            self._plan.plan_hash if self._plan else None,
            approved=False,
        )
        return f"plan rejected by {rejection.approver}"

    @reject_plan.validator
    def _validate_reject(self, rejection: RejectPlan) -> None:
        self._gates.require_open("approve_plan")

    @workflow.signal(name="approve_plan_signal", description="Signal form of approve_plan (a stale hash is ignored)")
    def approve_plan_signal(self, approval: ApprovePlan) -> None:
        self._approve_by_signal(approval)

    def _approve_by_signal(self, approval: ApprovePlan) -> None:
        self._gates.approve_by_signal(self._plan.plan_hash if self._plan else None, approval)

    @workflow.update(
        name="answer_gate",
        description="Older form of the gate updates: args [gate, "
        '{"approver": "..."}]; prefer the update named for the gate',
    )
    async def answer_gate(self, name: str, answer: GateAnswer) -> str:
        return self._answer(name, answer)

    def _answer(self, name: str, answer: GateAnswer) -> str:
        self._gates.answer(name, answer)
        return f"{name} answered by {answer.approver}"

    @answer_gate.validator
    def _validate_gate(self, name: str, answer: GateAnswer) -> None:
        if name not in self.YES_NO_GATES:
            raise ValueError(f"unknown gate {name!r}; gates: {', '.join(self.YES_NO_GATES) or 'none'}")
        self._gates.require_open(name)

    @workflow.signal(name="answer_gate_signal", description="Signal form of answer_gate (ignored unless open)")
    def answer_gate_signal(self, name: str, answer: GateAnswer) -> None:
        if name in self.YES_NO_GATES:
            self._answer_by_signal(name, answer)
        else:
            workflow.logger.warning("ignored signal for %s, not a yes/no gate", name)

    def _answer_by_signal(self, name: str, answer: GateAnswer) -> None:
        if name in self._gates.open:
            self._gates.answer(name, answer)
        else:
            workflow.logger.warning("ignored signal for gate %s that is not open", name)

    @workflow.query(name="status", description="Stage, plan, open gates with how to answer, steps and findings")
    def status(self) -> RunStatus:
        return self._run_status()

    def _run_status(self) -> RunStatus:
        return RunStatus(
            workflow=self.WORKFLOW,
            target=self._target,
            stage=self._gates.stage,
            plan_hash=self._plan.plan_hash if self._plan else None,
            plan=self._plan,
            gates=list(self._gates.open.values()),
            steps=self._steps.records,
            findings=self._findings,
            leftovers=self._leftovers,
            approvals=self._gates.approvals,
        )


def yes_no_gate(gate: str, description: str) -> tuple[Any, Any]:
    """The update ``gate`` (one :class:`GateAnswer` argument, refused unless the gate is open) and the signal
    ``<gate>_signal`` (ignored unless open), both described by ``description`` for the UI. ``self`` stays
    unannotated: temporalio takes an annotated first parameter for the payload's."""

    async def answer(self, answer: GateAnswer) -> str:  # type: ignore[no-untyped-def]
        return str(self._answer(gate, answer))

    def validate(self, answer: GateAnswer) -> None:  # type: ignore[no-untyped-def]
        self._gates.require_open(gate)

    def by_signal(self, answer: GateAnswer) -> None:  # type: ignore[no-untyped-def]
        self._answer_by_signal(gate, answer)

    payload = ' (payload {"approver": "...", "comment": "..."}, both optional)'
    update: Callable[..., Any] = workflow.update(name=gate, description=description + payload)(answer)
    update.validator(validate)  # type: ignore[attr-defined]  # the update decorator adds .validator
    signal = workflow.signal(name=f"{gate}_signal", description=f"Signal form of {gate} (ignored unless open)")
    return update, signal(by_signal)
