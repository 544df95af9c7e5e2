"""Rollbacks that finish and say what is left: the ``retry_rollback`` gate of the saga-driven runs.

A run that inherits :class:`SagaRun` unwinds its saga with :meth:`SagaRun._roll_back`.
When an undo still fails after its retries, its step stays on the saga, the
objects it left are in ``status`` (``leftovers``: layer, kind, name, namespace,
step, why) and the run waits at ``retry_rollback`` (an update of its own name);
answering it undoes exactly the steps still on the saga. If nobody answers before
the gate expires, the run fails with ``RollbackIncomplete`` whose details are the
leftovers, at stage ``rollback-incomplete``. Runs recorded before this gate
(without the ``retry-rollback-gate`` patch) keep their old behaviour.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import Facts
    from tenantflow.models.results import EnsureResult
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.gate_handlers import GatedRun, yes_no_gate
from tenantflow.workflows.saga import Saga

RETRY_ROLLBACK_PATCH = "retry-rollback-gate"
RETRY_ROLLBACK = "retry_rollback"


class RetryRollbackGate(GatedRun):
    """Declares the ``retry_rollback`` update and signal (the runs that roll back share them)."""

    retry_rollback, retry_rollback_signal = yes_no_gate(
        RETRY_ROLLBACK, "Undo again the steps whose undo failed (status lists the objects left); fix their cause first"
    )


class SagaRun(RetryRollbackGate):
    async def _roll_back(
        self, saga: Saga, contract: TenantContract, facts: Facts, escalate_after: timedelta, expire_after: timedelta
    ) -> list[EnsureResult]:
        """Undo the saga; wait at ``retry_rollback`` while objects are left; ``RollbackIncomplete`` on expiry."""
        if not self._patches.has(RETRY_ROLLBACK_PATCH):
            return await saga.unwind(contract, facts)
        undone, self._leftovers = await saga.undo_keeping_failures(contract, facts)
        while self._leftovers:
            left = "; ".join(item.describe() for item in self._leftovers)
            try:
                await self._wait_gate(
                    RETRY_ROLLBACK,
                    f"{len(self._leftovers)} objects left by a failed undo: {left}",
                    escalate_after,
                    expire_after,
                )
            except ApplicationError:
                self._gates.set_stage("rollback-incomplete", f"Rollback incomplete; left: {left}")
                raise ApplicationError(
                    f"rollback incomplete, objects left: {left}",
                    *[item.model_dump(mode="json") for item in self._leftovers],
                    type="RollbackIncomplete",
                    non_retryable=True,
                ) from None
            self._gates.set_stage("rolling-back", "Retrying the failed undos")
            more, self._leftovers = await saga.undo_keeping_failures(contract, facts)
            undone += more
        return undone
