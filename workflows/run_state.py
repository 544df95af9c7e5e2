"""What a gated run decides at its gates and shows in ``status``: the collaborator every gated workflow owns.

A workflow class builds one :class:`RunState` in ``__init__`` (``GatedWorkflow.__init__`` does) and keeps it as
``self.state``; its handlers (``workflows/gate_handlers.py``), its saga's rollback (``workflows/rollback.py``) and
its records (``workflows/records.py``) read and change the run through it. Every attribute is public: the plan
waiting at ``approve_plan``, the open gates and answers (:class:`~tenantflow.workflows.gate_waits.Gates`), the
steps run so far, the findings, the objects a failed undo left, and the patches the run has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import ApprovePlan, GateAnswer, GateState, RejectPlan
    from tenantflow.models.plan import Plan, plan_changes
    from tenantflow.models.results import Finding
    from tenantflow.models.rollback import Leftover
    from tenantflow.models.status import RunStatus

from tenantflow.workflows.gate_waits import Gates, answer_of
from tenantflow.workflows.patches import Patches
from tenantflow.workflows.steps import StepTracker

REPLAN_PATCH = "replan-before-apply"
"""Histories recorded before approval was bound to a fresh read-only plan replay without it."""
PLAN_APPROVED = "plan {plan_hash} approved by {approver}"
"""What approve_plan answers by default (``str.format`` with ``plan_hash`` and ``approver``)."""


class RunState:
    """The gates, plan, steps and findings of one gated run of ``workflow`` (its type name)."""

    def __init__(self, workflow_type: str, yes_no_gates: tuple[str, ...] = ()) -> None:
        self.workflow = workflow_type
        self.yes_no_gates = yes_no_gates
        """The gates ``answer_gate`` may answer besides approve_plan."""
        self.patches = Patches()
        self.gates = Gates(self.patches)
        self.steps = StepTracker()
        self.plan: Plan | None = None
        self.findings: list[Finding] = []
        self.rejected: RejectPlan | None = None
        self.target = ""
        self.leftovers: list[Leftover] = []
        self.answer_checks: dict[str, Callable[[GateAnswer, GateState], None]] = {}
        """A gate's own check of an answer against the gate as it is open now (raises ``ValueError`` saying why the
        answer does not count): an update carrying it is refused, a signal ignored."""

    @property
    def plan_hash(self) -> str | None:
        return self.plan.plan_hash if self.plan else None

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.blocks]

    async def wait_plan_approval(
        self,
        plan: Plan,
        escalate_after: timedelta,
        expire_after: timedelta,
        changes: list[str] | None = None,
        shown: str = "",
    ) -> bool:
        """Publish ``plan`` and wait for approve_plan or reject_plan; True when approved. ``changes``: how it differs
        from a plan approved earlier (the gate reopened because the world changed before apply); ``shown``: text
        the gate shows as it is (a command's output that the plan binds)."""
        self.plan = plan
        self.rejected = None
        wid = workflow.info().workflow_id
        changed = f"; CHANGED since the last approval: {', '.join(changes)}" if changes else ""
        verbatim = f"\n\n{shown}" if shown else ""
        await self.gates.wait(
            "approve_plan",
            f"approve plan {plan.plan_hash} ({len(plan.writes())} writes){changed}{verbatim}",
            [
                f"tenantflow approve {wid} --plan-hash {plan.plan_hash}",
                f"tenantflow reject {wid} --reason '...'",
                f'Temporal UI: Update \'approve_plan\' with {{"plan_hash": "{plan.plan_hash}"}}',
            ],
            escalate_after=escalate_after,
            expire_after=expire_after,
        )
        return self.rejected is None

    async def reapprove_if_changed(
        self, plan: Plan, replan: Callable[[], Awaitable[Plan]], escalate_after: timedelta, expire_after: timedelta
    ) -> tuple[bool, Plan]:
        """Right before the first write, plan again (read-only): while the plan differs from the approved one,
        ``approve_plan`` opens again with the new plan and what changed. (approved, the plan to apply)."""
        approved = True
        while approved and self.patches.has(REPLAN_PATCH):
            current = await replan()
            if current.plan_hash == plan.plan_hash:
                break
            approved = await self.wait_plan_approval(current, escalate_after, expire_after, plan_changes(plan, current))
            plan = current
        return approved, plan

    async def wait_gate(
        self, name: str, description: str, escalate_after: timedelta, expire_after: timedelta
    ) -> GateAnswer:
        """Open the yes/no gate ``name`` and wait for its answer."""
        wid = workflow.info().workflow_id
        how = [
            f"tenantflow {name.replace('_', '-')} {wid}",
            f'temporal workflow update execute --workflow-id {wid} --name {name} --input \'{{"approver": "you"}}\'',
            f'Temporal UI: Update \'{name}\' with {{"approver": "you"}}',
        ]
        return await self.gates.wait(name, description, how, escalate_after=escalate_after, expire_after=expire_after)

    def approve(self, approval: ApprovePlan, answer: str = PLAN_APPROVED) -> str:
        """approve_plan: close the gate; ``answer`` formatted with the plan hash and the approver."""
        self.gates.answer("approve_plan", answer_of(approval), approval.plan_hash)
        return answer.format(plan_hash=approval.plan_hash, approver=approval.approver)

    def validate_approval(self, approval: ApprovePlan) -> None:
        """Refuse approve_plan unless the gate is open and the hash is the current plan's."""
        self.gates.require_open("approve_plan")
        current = self.plan_hash
        if approval.plan_hash != current:
            raise ValueError(
                f"stale or unknown plan hash {approval.plan_hash}; the current plan is {current} "
                "(see `tenantflow status`)"
            )

    def approve_by_signal(self, approval: ApprovePlan) -> None:
        self.gates.approve_by_signal(self.plan_hash, approval)

    def reject(self, rejection: RejectPlan) -> str:
        self.rejected = rejection
        self.gates.answer(
            "approve_plan",
            GateAnswer(approver=rejection.approver, comment=rejection.reason, proof=rejection.proof),
            self.plan_hash,
            False,
        )
        return f"plan rejected by {rejection.approver}"

    def answer(self, name: str, answer: GateAnswer) -> str:
        """Answer the yes/no gate ``name`` (its update, or answer_gate)."""
        self.gates.answer(name, answer)
        return f"{name} answered by {answer.approver}"

    def validate_answer(self, name: str, answer: GateAnswer) -> None:
        """Refuse an answer to a gate that is not one of the run's or not open, or that the gate's check refuses."""
        if name not in self.yes_no_gates:
            raise ValueError(f"unknown gate {name!r}; gates: {', '.join(self.yes_no_gates) or 'none'}")
        self.check_answer(name, answer)

    def check_answer(self, name: str, answer: GateAnswer) -> None:
        """Refuse an answer to gate ``name`` unless it is open and its check (:attr:`answer_checks`) takes it."""
        self.gates.require_open(name)
        check = self.answer_checks.get(name)
        if check is not None:
            check(answer, self.gates.open[name])

    def answer_by_signal(self, name: str, answer: GateAnswer) -> None:
        """The signal form of a yes/no gate: answer it only while it is open and its check takes the answer, else
        warn."""
        try:
            self.check_answer(name, answer)
        except ValueError as refused:
            workflow.logger.warning("ignored signal for gate %s: %s", name, refused)
            return
        self.gates.answer(name, answer)

    def status(self) -> RunStatus:
        return RunStatus(
            workflow=self.workflow,
            target=self.target,
            stage=self.gates.stage,
            plan_hash=self.plan_hash,
            plan=self.plan,
            gates=list(self.gates.open.values()),
            steps=self.steps.records,
            findings=self.findings,
            leftovers=self.leftovers,
            approvals=self.gates.approvals,
        )
