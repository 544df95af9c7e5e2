"""The compensation stack of a run: each applied step records how to undo it.

Unwinding follows the runbook's rollback order, not plain reverse order: Slurm
first (cheap), then Kubernetes, the Reservation, Weka, and Authentik last (most
disruptive). Inside one layer, later steps are undone first.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.onboarding import Facts, UndoInput
    from models.results import EnsureResult
    from models.tenant import TenantContract

ROLLBACK_ORDER = ("smoke", "login", "slurm", "kube", "capacity", "storage", "identity")
UNDO_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                         maximum_interval=timedelta(seconds=30), maximum_attempts=20)


class Saga:
    """Records applied steps and undoes what they made."""

    def __init__(self) -> None:
        self._done: list[tuple[str, str, list[EnsureResult]]] = []

    def push(self, layer: str, step: str, results: list[EnsureResult]) -> None:
        if any(r.wrote for r in results):
            self._done.append((layer, step, results))

    def __len__(self) -> int:
        return len(self._done)

    def ordered(self) -> list[tuple[str, str, list[EnsureResult]]]:
        indexed = list(enumerate(self._done))
        indexed.sort(key=lambda item: (ROLLBACK_ORDER.index(item[1][0]), -item[0]))
        return [entry for _, entry in indexed]

    async def unwind(self, contract: TenantContract, facts: Facts) -> list[EnsureResult]:
        """Undo every recorded step; keep going past a failed undo and report it at the end."""
        undone: list[EnsureResult] = []
        failures: list[str] = []
        for layer, step, results in self.ordered():
            try:
                undone.extend(await workflow.execute_activity(
                    f"{layer}.undo",
                    UndoInput(contract=contract, facts=facts, step=step, results=results),
                    result_type=list[EnsureResult],
                    start_to_close_timeout=timedelta(minutes=5),
                    retry_policy=UNDO_RETRY,
                    summary=f"undo {layer}.{step}",
                ))
            except Exception as exc:  # an undo that keeps failing must not stop the others
                failures.append(f"{layer}.{step}: {exc}")
        self._done.clear()
        if failures:
            raise ApplicationError("rollback incomplete: " + "; ".join(failures),
                                            type="RollbackIncomplete", non_retryable=True)
        return undone
