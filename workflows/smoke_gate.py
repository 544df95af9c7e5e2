"""The ``smoke_failed`` gate: a smoke check that finds an error stops the onboarding there, with nothing rolled back.

The runbook's cure for a failed smoke test is "fix the node or the chart, re-run the smoke test", and most smoke
failures are the cluster's, not the tenant's. In runs with :data:`SMOKE_GATE_PATCH`, when the smoke checks report an
error finding the run waits at ``smoke_failed`` (its description and ``status`` list each finding with its fix; the
failing steps are shown ``failed``) for a :class:`~tenantflow.models.gates.SmokeFailedAnswer`, the update
``smoke_failed`` (``tenantflow smoke-failed ID rerun|rollback|waive``):

* ``rerun`` (also an answer that names no choice: ``answer_gate``, ``{"approver": "..."}``): the smoke checks run
  again from the facts the apply steps left, their findings replacing the failed ones; while they still fail the
  gate opens again;
* ``rollback``: the run fails with the findings (``SmokeFailed``) and the saga is undone, as before the gate;
* ``waive`` (with a reason as ``comment``): the findings stay, as warnings that name who waived them and why;
  validation and the handover follow, and the handover sheet lists them under "Smoke checks waived".

An answer counts only for the opening it names (``opened_at``, which ``status`` lists and the proof signs): the
gate opens again after every re-run that still fails, and the signed answer to an earlier opening is in the run's
history for any Temporal client to read and send again. Such an answer is refused (a signal: ignored), as is one
with a proof that names no opening; the CLI and the HTTP API name the opening they answer.

A smoke check whose activity fails after its retries (a node that does not answer, the worker refused) is an error
finding with the step's error, and stops at the gate the same way. The gate expires like every other
(``GateExpired``), and the tenant is then rolled back. The patch is checked only when a smoke check failed, so a run
whose checks pass writes no marker; runs recorded before it fail at validation (or roll back at the failed step).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import Approval, GateAnswer, GateState, SmokeFailedAnswer
    from tenantflow.models.onboarding import Facts, Handover
    from tenantflow.models.results import Finding, Severity

from tenantflow.workflows.gate_handlers import GateSignal, GateUpdate, yes_no_gate
from tenantflow.workflows.run_state import RunState
from tenantflow.workflows.steps import error_text
from tenantflow.workflows.tenant_run import failures_in_words

SMOKE_GATE_PATCH = "smoke-failed-gate"
"""Histories recorded before a failed smoke check waited at ``smoke_failed`` fail the run at validation instead."""
SMOKE_FAILED = "smoke_failed"
SMOKE_FIELDS = (
    'payload {"choice": "rerun" | "rollback" | "waive", "approver": "...", "comment": "..."}; choice defaults to '
    "rerun, a waiver needs comment: its reason"
)


def smoke_failed_gate() -> tuple[GateUpdate, GateSignal]:
    """The ``smoke_failed`` update and signal, for the onboarding to bind once."""
    return yes_no_gate(
        SMOKE_FAILED,
        "Smoke checks failed (status lists each with its fix): re-run them after fixing the node or chart, roll the "
        "tenant back, or waive them with a reason",
        SmokeFailedAnswer,
        SMOKE_FIELDS,
    )


def smoke_errors(findings: list[Finding]) -> list[Finding]:
    """The findings of smoke checks that found an error."""
    return [f for f in findings if f.check.startswith("smoke.") and f.blocks]


def rolled_back(failed: list[Finding], approver: str) -> ApplicationError:
    """The failure of a run whose ``smoke_failed`` was answered ``rollback``: each finding with its fix."""
    return ApplicationError(
        f"smoke checks failed and {approver} chose to roll back at smoke_failed: {failures_in_words(failed)}",
        *[f.model_dump(mode="json") for f in failed],
        type="SmokeFailed",
        non_retryable=True,
    )


def step_failed(step: str, err: ActivityError) -> Finding:
    """The error finding of a smoke check whose activity failed (after its retries), with the step's own error."""
    fix = "fix what the error names on the nodes or in the chart (the worker's log has every attempt), then re-run"
    return Finding.failed(step, f"the check failed to run: {error_text(err)}", fix)


def for_this_opening(answer: GateAnswer, gate: GateState) -> None:
    """Refuse an answer to ``smoke_failed`` made for another opening of the gate, or one with a proof that names
    none (the module's docstring)."""
    at = answer.opened_at if isinstance(answer, SmokeFailedAnswer) else None
    if at is None and answer.proof is not None:
        raise ValueError(
            f"an answer to {SMOKE_FAILED} with a proof must name the opening it answers and sign it: opened_at "
            f"{gate.opened_at.isoformat()} (status lists it; `tenantflow smoke-failed` sends it)"
        )
    if at is not None and at != gate.opened_at:
        raise ValueError(
            f"this answer is for {SMOKE_FAILED} as it opened at {at.isoformat()}, which was answered; the gate "
            f"opened again at {gate.opened_at.isoformat()} with the findings status shows now: answer those"
        )


def waived(finding: Finding, approval: Approval) -> Finding:
    """``finding`` accepted at ``smoke_failed``: a warning naming who waived it and why."""
    said = f"{finding.message} [waived by {approval.approver}: {approval.comment}]"
    return finding.model_copy(update={"severity": Severity.warning, "message": said})


class SmokeGate:
    """Waits at ``smoke_failed`` while the smoke checks fail; keeps the waiver for the handover sheet."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        state.answer_checks[SMOKE_FAILED] = for_this_opening
        self.waiver: tuple[list[Finding], Approval] | None = None
        """The findings waived and the answer that waived them."""

    async def settle(
        self, facts: Facts, check: Callable[[], Awaitable[Facts]], escalate_after: timedelta, expire_after: timedelta
    ) -> Facts:
        """``facts`` after the smoke checks ran once; while they report errors (runs with :data:`SMOKE_GATE_PATCH`),
        wait at ``smoke_failed`` and re-run them with ``check``, roll back or waive, as answered. The facts of the
        last checks."""
        state = self.state
        while (failed := smoke_errors(state.findings)) and state.patches.has(SMOKE_GATE_PATCH):
            answer = await self.wait(failed, escalate_after, expire_after)
            choice = answer.choice if isinstance(answer, SmokeFailedAnswer) else "rerun"
            if choice == "rollback":
                raise rolled_back(failed, answer.approver)
            if choice == "waive":
                approval = next(a for a in reversed(state.gates.approvals) if a.gate == SMOKE_FAILED)
                self.waiver = failed, approval
                state.findings = [waived(f, approval) if f in failed else f for f in state.findings]
                break
            state.findings = [f for f in state.findings if not f.check.startswith("smoke.")]
            facts = await check()
        return facts

    async def wait(self, failed: list[Finding], escalate_after: timedelta, expire_after: timedelta) -> GateAnswer:
        wid = workflow.info().workflow_id
        update = f"temporal workflow update execute --workflow-id {wid} --name {SMOKE_FAILED} --input"
        return await self.state.gates.wait(
            SMOKE_FAILED,
            f"{len(failed)} smoke check(s) failed, nothing was rolled back: {failures_in_words(failed)}",
            [
                f"tenantflow smoke-failed {wid} rerun",
                f"tenantflow smoke-failed {wid} rollback",
                f"tenantflow smoke-failed {wid} waive --reason '...'",
                f'{update} \'{{"approver": "you", "choice": "rerun"}}\'',
                f'Temporal UI: Update \'{SMOKE_FAILED}\' with {{"approver": "you", "choice": "rerun"}}',
            ],
            escalate_after=escalate_after,
            expire_after=expire_after,
        )

    def on_sheet(self, handover: Handover) -> Handover:
        """``handover`` with the waiver, when the failures were waived."""
        return handover if self.waiver is None else handover.with_waiver(*self.waiver)
