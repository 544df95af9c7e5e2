"""The compensation stack of a run: each applied step records how to undo it.

Unwinding follows the runbook's rollback order (``runbook.UNDO_ORDER``), not plain
reverse order: Slurm first (cheap), then Kubernetes, the Reservation, Weka, and
Authentik last (most disruptive). Inside one layer, later steps are undone first.

A step's entry also lists the plan's ``create`` entries for it: they count as
created by this run even when the step failed before returning (a crash after
its writes) or an earlier attempt made them and lost the answer (the result then
says unchanged, or updated when the retry finished the object; the run's report
says created too, :func:`as_planned`).
Every undo looks objects up by name and leaves absent ones alone.

:meth:`Saga.undo_keeping_failures` keeps the entries whose undo failed (after
its retries) and reports their objects as :class:`Leftover`; running it again
retries exactly those, so a rollback can be resumed (see ``workflows/rollback.py``).

One saga serves every run that undoes: the tenant runs push the runbook steps they applied and undo each with its
catalogue undo (:func:`undo_steps`); enrollment adds its removals (:meth:`Saga.add`) in the order they run, with
``order=list``, and undoes each by running the removal itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import Facts, StepInput, StepResult, UndoInput
    from tenantflow.models.plan import PlanStep
    from tenantflow.models.results import EnsureResult, Outcome
    from tenantflow.models.rollback import Leftover
    from tenantflow.models.runbook import UNDO_ORDER
    from tenantflow.models.step import Step
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.steps import execute

ApplyStep = Step[StepInput, StepResult]
Entry = tuple[Step[Any, Any], list[EnsureResult]]
"""A step on the saga and the objects its undo removes."""
Undo = Callable[[Entry], Awaitable[list[EnsureResult]]]
"""How a saga's entry is undone: what the undo reports."""
UNDO_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=20,
)


OWN_EARLIER_WRITE = frozenset({Outcome.unchanged, Outcome.updated})
"""What a step reports for a planned creation that an earlier attempt made and whose answer it never got: found
already there and ours (``unchanged``), or ours and brought up to date (``updated``; Authentik's group gets its
gid after the create). Never ``adopted``: an object that is not ours stays another's."""


def as_planned(results: list[EnsureResult], planned: list[PlanStep]) -> list[EnsureResult]:
    """``results`` with every planned creation the step found made by an earlier attempt marked created."""
    creates = {(p.kind, p.name, p.namespace) for p in planned}
    return [
        r.model_copy(update={"outcome": Outcome.created})
        if (r.kind, r.name, r.namespace) in creates and r.outcome in OWN_EARLIER_WRITE
        else r
        for r in results
    ]


def with_planned(results: list[EnsureResult], planned: list[PlanStep]) -> list[EnsureResult]:
    """``results`` with every planned creation marked created (:func:`as_planned`), adding those the step did not
    report."""
    creates = {(p.kind, p.name, p.namespace): p for p in planned}
    merged = as_planned(results, planned)
    reported = {(r.kind, r.name, r.namespace) for r in results}
    merged += [
        EnsureResult(layer=p.layer, kind=p.kind, name=p.name, namespace=p.namespace, outcome=Outcome.created)
        for key, p in creates.items()
        if key not in reported
    ]
    return merged


def undo_of(step: Step[Any, Any]) -> Step[UndoInput, list[EnsureResult]]:
    if step.undo is None:
        raise ValueError(f"{step.name} has no undo in the catalogue; it cannot go on the saga")
    return step.undo


def in_runbook_order(entries: list[Entry]) -> list[Entry]:
    """The runbook's rollback order (``UNDO_ORDER`` of each step's undo); inside one layer, later steps first."""
    indexed = list(enumerate(entries))
    indexed.sort(key=lambda item: (UNDO_ORDER.index(undo_of(item[1][0])), -item[0]))
    return [entry for _, entry in indexed]


def undo_steps(contract: TenantContract, facts: Facts) -> Undo:
    """Undo an applied runbook step with its catalogue undo activity, given what the step reported."""

    async def undo(entry: Entry) -> list[EnsureResult]:
        step, results = entry
        return await execute(
            undo_of(step),
            UndoInput(contract=contract, facts=facts, step=step.short, results=results),
            retry_policy=UNDO_RETRY,
            summary=f"undo {step.name}",
        )

    return undo


class Saga:
    """Records applied steps and undoes what they made, in ``order`` (by default the runbook's)."""

    def __init__(self, order: Callable[[list[Entry]], list[Entry]] = in_runbook_order) -> None:
        self._done: list[Entry] = []
        self._order = order

    def push(self, step: ApplyStep, results: list[EnsureResult], planned: list[PlanStep] | None = None) -> None:
        """Record ``step`` with what it wrote (and the plan's creations for it); nothing when it wrote nothing."""
        merged = with_planned(results, planned or [])
        if any(r.wrote for r in merged):
            self._done.append((step, merged))

    def add(self, step: Step[Any, Any], objects: list[EnsureResult]) -> None:
        """Record ``step``, undone whatever it recorded; ``objects``: what is left when its undo fails."""
        self._done.append((step, objects))

    def __len__(self) -> int:
        return len(self._done)

    def ordered(self) -> list[Entry]:
        return self._order(list(self._done))

    async def _undo_each(self, undo: Undo) -> tuple[list[EnsureResult], list[tuple[Entry, Exception]]]:
        """Undo every recorded step in rollback order; keep going past a failed undo."""
        undone: list[EnsureResult] = []
        failed: list[tuple[Entry, Exception]] = []
        for entry in self.ordered():
            try:
                undone.extend(await undo(entry))
            except Exception as exc:  # an undo that keeps failing must not stop the others
                failed.append((entry, exc))
        return undone, failed

    async def unwind(self, undo: Undo) -> list[EnsureResult]:
        """Undo every recorded step, clear the saga and raise ``RollbackIncomplete`` if an undo failed (the
        behaviour of runs recorded before ``retry_rollback``)."""
        undone, failed = await self._undo_each(undo)
        self._done.clear()
        if failed:
            raise ApplicationError(
                "rollback incomplete: " + "; ".join(f"{step.name}: {exc}" for (step, _), exc in failed),
                type="RollbackIncomplete",
                non_retryable=True,
            )
        return undone

    async def undo_keeping_failures(self, undo: Undo) -> tuple[list[EnsureResult], list[Leftover]]:
        """Undo every recorded step; only the steps whose undo failed stay on the saga, their objects returned
        as leftovers."""
        undone, failed = await self._undo_each(undo)
        self._done = [entry for entry, _ in failed]
        return undone, [
            Leftover(
                layer=r.layer, kind=r.kind, name=r.name, namespace=r.namespace, step=step.name, why=root_message(exc)
            )
            for (step, results), exc in failed
            for r in results
            if r.wrote
        ]


def root_message(err: BaseException) -> str:
    """The innermost message of ``err``'s cause chain: an activity failure's own error, not "Activity task failed"."""
    while err.__cause__ is not None:
        err = err.__cause__
    return str(err)
