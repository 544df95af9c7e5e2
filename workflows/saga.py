"""The compensation stack of a run: each applied step records how to undo it.

Unwinding follows the runbook's rollback order (``runbook.ROLLBACK``), not plain
reverse order: Slurm first (cheap), then Kubernetes, the Reservation, Weka, and
Authentik last (most disruptive). Inside one layer, later steps are undone first.

A step's entry also lists the plan's ``create`` entries for it: they count as
created by this run even when the step failed before returning (a crash after
its writes) or an earlier attempt made them (the result then says unchanged).
Every undo looks objects up by name and leaves absent ones alone.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import Facts, StepInput, StepResult, UndoInput
    from tenantflow.models.plan import PlanStep
    from tenantflow.models.results import EnsureResult, Outcome
    from tenantflow.models.runbook import ROLLBACK, Step
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.steps import execute

ApplyStep = Step[StepInput, StepResult]
UNDO_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=20,
)


def with_planned(results: list[EnsureResult], planned: list[PlanStep]) -> list[EnsureResult]:
    """``results`` with every planned creation marked created, adding those the step did not report."""
    creates = {(p.kind, p.name, p.namespace): p for p in planned}
    merged = [
        r.model_copy(update={"outcome": Outcome.created})
        if (r.kind, r.name, r.namespace) in creates and r.outcome is Outcome.unchanged
        else r
        for r in results
    ]
    reported = {(r.kind, r.name, r.namespace) for r in results}
    merged += [
        EnsureResult(layer=p.layer, kind=p.kind, name=p.name, namespace=p.namespace, outcome=Outcome.created)
        for key, p in creates.items()
        if key not in reported
    ]
    return merged


def undo_of(step: ApplyStep) -> Step[UndoInput, list[EnsureResult]]:
    if step.undo is None:
        raise ValueError(f"{step.name} has no undo in the catalogue; it cannot go on the saga")
    return step.undo


class Saga:
    """Records applied steps and undoes what they made."""

    def __init__(self) -> None:
        self._done: list[tuple[ApplyStep, list[EnsureResult]]] = []

    def push(self, step: ApplyStep, results: list[EnsureResult], planned: list[PlanStep] | None = None) -> None:
        merged = with_planned(results, planned or [])
        if any(r.wrote for r in merged):
            self._done.append((step, merged))

    def __len__(self) -> int:
        return len(self._done)

    def ordered(self) -> list[tuple[ApplyStep, list[EnsureResult]]]:
        indexed = list(enumerate(self._done))
        indexed.sort(key=lambda item: (ROLLBACK.index(undo_of(item[1][0])), -item[0]))
        return [entry for _, entry in indexed]

    async def unwind(self, contract: TenantContract, facts: Facts) -> list[EnsureResult]:
        """Undo every recorded step; keep going past a failed undo and report it at the end."""
        undone: list[EnsureResult] = []
        failures: list[str] = []
        for step, results in self.ordered():
            try:
                undone.extend(
                    await execute(
                        undo_of(step),
                        UndoInput(contract=contract, facts=facts, step=step.short, results=results),
                        retry_policy=UNDO_RETRY,
                        summary=f"undo {step.name}",
                    )
                )
            except Exception as exc:  # an undo that keeps failing must not stop the others
                failures.append(f"{step.name}: {exc}")
        self._done.clear()
        if failures:
            raise ApplicationError(
                "rollback incomplete: " + "; ".join(failures), type="RollbackIncomplete", non_retryable=True
            )
        return undone
