"""The bootstrap step of ``WorkerEnrollment`` with the CLI's own plan at ``approve_plan``.

Patch ``konduktor-bootstrap-plan-gate``.

``konduktor.bootstrap`` runs ``konduktor worker bootstrap`` to its prompt and signals what the CLI printed
(``bootstrap_plan_printed``: the text as printed, its SHA-256 and the form the blob was passed in). The run then opens
``approve_plan`` again with the approved enrollment plan plus one step (:data:`BOOTSTRAP_PRINTED`) holding that text, so
the plan hash the approver names covers exactly that text; the gate shows it verbatim. The activity polls
``bootstrap_plan_answer`` with the text's SHA-256 and writes ``y`` to the prompt only once the answer is ``approved``
(``n`` on ``rejected``: once a printed text is rejected, every text not approved by then is answered ``rejected``, so a
rejection at the gate rejects the bootstrap whatever text the gate showed). A retried attempt whose fresh text hashes to
an approved text proceeds without a gate; other text opens the gate again with the lines that changed. The run's plan
and its approval (what its record is stamped with) stay the enrollment plan's; every approval is listed. A retried step
that prints other text while the gate shows the earlier one replaces it at the gate. If the step ends while its plan
waits (the CLI failed or was killed), the gate closes; if the gate expires or the run is cancelled, the step is
cancelled (the activity kills the CLI at its prompt: nothing was answered).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_steps import KONDUKTOR_BOOTSTRAP
    from tenantflow.models.enrollment_workflows import (
        BOOTSTRAP_PRINTED,
        BootstrapAnswer,
        BootstrapPlanPrinted,
        EnrollmentStep,
    )
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.results import EnsureResult, Finding

from tenantflow.workflows.run_state import RunState

BOOTSTRAP_GATE_PATCH = "konduktor-bootstrap-plan-gate"
"""Runs with it approve the plan ``konduktor worker bootstrap`` printed before it is answered; runs recorded before
approved by comparing the plan's components."""


def shown(printed: BootstrapPlanPrinted) -> str:
    """The printed plan as the gate shows it: verbatim, in a fenced block, with its SHA-256 and the blob's form."""
    return (
        f"`konduktor worker bootstrap` printed (blob passed as {printed.form}; sha256 {printed.sha256}); "
        f"it waits at its prompt for this approval:\n```\n{printed.text}\n```"
    )


class BootstrapGate:
    """What the bootstrap step printed, and the answers given to each printed text (by SHA-256)."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.printed: BootstrapPlanPrinted | None = None
        self.approved: dict[str, str] = {}
        """SHA-256 -> text of every printed plan approved in this run."""
        self.rejected: set[str] = set()
        self.gated = False
        """Whether this run's bootstrap waits for its printed plan's approval (the patch was taken)."""

    def answered_yes(self) -> bool:
        """Whether the CLI may go on to register the worker: the bootstrap is not gated, or a printed plan was
        approved (a brownfield cordon waits for this, not for the human at the gate)."""
        return not self.gated or bool(self.approved)

    def on_printed(self, printed: BootstrapPlanPrinted) -> None:
        self.printed = printed

    def answer(self, sha256: str) -> BootstrapAnswer:
        """``approved`` for an approved text; once any printed text was rejected, ``rejected`` for every other (a
        rejection at this gate rejects the bootstrap); else ``waiting``. Were only the rejected text refused, a text
        signalled in place of the CLI's (anyone reaching Temporal can signal one) and rejected would leave the CLI
        at its prompt, its own text neither shown nor answered, for the step's whole timeout."""
        if sha256 in self.approved:
            return "approved"
        return "rejected" if self.rejected else "waiting"

    def _reprinted(self, printed: BootstrapPlanPrinted) -> Callable[[], bool]:
        """Whether a retried step has printed other text than ``printed`` (while the gate shows it)."""
        return lambda: self.printed is not None and self.printed.sha256 != printed.sha256

    def _unanswered(self) -> bool:
        return self.printed is not None and self.answer(self.printed.sha256) == "waiting"

    async def run(
        self, step: EnrollmentStep, plan: Plan, escalate_after: timedelta, expire_after: timedelta
    ) -> list[EnsureResult]:
        """Run ``konduktor.bootstrap`` and answer each plan it prints at ``approve_plan``; its result. Runs without
        :data:`BOOTSTRAP_GATE_PATCH` run the step as they did."""
        if not workflow.patched(BOOTSTRAP_GATE_PATCH):
            return await self.state.steps.run(KONDUKTOR_BOOTSTRAP, step)
        self.gated = True
        gated = step.model_copy(update={"plan_gate": True})
        plan_answer = self.state.gates.answers.get("approve_plan")
        bootstrap = asyncio.ensure_future(self.state.steps.run(KONDUKTOR_BOOTSTRAP, gated))
        try:
            while True:
                await workflow.wait_condition(lambda: bootstrap.done() or self._unanswered())
                if bootstrap.done():
                    break
                printed = self.printed
                assert printed is not None
                gate = asyncio.ensure_future(self._ask(printed, plan, escalate_after, expire_after))
                reprinted = asyncio.ensure_future(workflow.wait_condition(self._reprinted(printed)))
                await workflow.wait([bootstrap, gate, reprinted], return_when=asyncio.FIRST_COMPLETED)
                reprinted.cancel()
                if not gate.done():
                    gate.cancel()
                    self.state.gates.open.pop("approve_plan", None)
                    if bootstrap.done():
                        break
                    continue
                if gate.result():
                    self.approved[printed.sha256] = printed.text
                else:
                    self.rejected.add(printed.sha256)
        except BaseException:
            bootstrap.cancel()
            with contextlib.suppress(asyncio.CancelledError, ActivityError):
                await bootstrap
            raise
        finally:
            self.state.plan = plan
            if plan_answer is not None:
                self.state.gates.answers["approve_plan"] = plan_answer
        installed = await bootstrap
        if self.printed is not None:
            self.state.findings.append(
                Finding.passed(
                    "konduktor.bootstrap",
                    f"answered yes to the approved plan (sha256 {self.printed.sha256}); the blob was passed as "
                    f"{self.printed.form}",
                )
            )
        return installed

    async def _ask(
        self, printed: BootstrapPlanPrinted, plan: Plan, escalate_after: timedelta, expire_after: timedelta
    ) -> bool:
        """``approve_plan`` with ``plan`` and the printed text; True when approved."""
        text_step = PlanStep(
            layer="worker",
            kind=BOOTSTRAP_PRINTED,
            name=self.state.target,
            action=Action.create,
            detail={"printed": printed.text, "sha256": printed.sha256, "form": printed.form},
        )
        with_text = Plan(title=plan.title, steps=[*plan.steps, text_step], notes=plan.notes)
        last = list(self.approved.values())[-1:]
        changes = (
            [line for line in difflib.ndiff(last[0].split("\n"), printed.text.split("\n")) if line[:2] in ("- ", "+ ")]
            if last
            else None
        )
        return await self.state.wait_plan_approval(
            with_text, escalate_after, expire_after, changes=changes, shown=shown(printed)
        )
