"""Rollbacks that finish and say what is left: the ``retry_rollback`` gate of the runs that undo a saga.

A workflow that rolls back owns a :class:`Rollback` over its run state and binds the gate's handlers once
(``retry_rollback, retry_rollback_signal = retry_rollback_gate()``). When an undo still fails after its retries,
its step stays on the saga, the objects it left are in ``status`` (``leftovers``: layer, kind, name, namespace,
step, why) and the run waits at ``retry_rollback`` (an update of its own name); answering it undoes exactly the
steps still on the saga. If nobody answers before the gate expires, the run fails with ``RollbackIncomplete``
whose details are the leftovers, at stage ``rollback-incomplete``. Tenant runs recorded before this gate
(without the ``retry-rollback-gate`` patch) keep their old behaviour (:meth:`Rollback.roll_back`); enrollment
keeps its own patches and texts (``workflows/enrollment_failures.py``) over the same loop
(:meth:`Rollback.undo_until_done`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.results import EnsureResult

from tenantflow.workflows.gate_handlers import GateSignal, GateUpdate, yes_no_gate
from tenantflow.workflows.run_state import RunState
from tenantflow.workflows.saga import Saga, Undo

RETRY_ROLLBACK_PATCH = "retry-rollback-gate"
RETRY_ROLLBACK = "retry_rollback"


def retry_rollback_gate() -> tuple[GateUpdate, GateSignal]:
    """The ``retry_rollback`` update and signal, for a workflow class to bind once."""
    return yes_no_gate(
        RETRY_ROLLBACK, "Undo again the steps whose undo failed (status lists the objects left); fix their cause first"
    )


class Rollback:
    """Undoes a saga, waiting at ``retry_rollback`` while objects are left."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def left(self) -> str:
        """The objects still left, in words."""
        return "; ".join(item.describe() for item in self.state.leftovers)

    def incomplete(self) -> ApplicationError:
        """The failure of a run whose rollback left objects: the leftovers as details."""
        return ApplicationError(
            f"rollback incomplete, objects left: {self.left()}",
            *[item.model_dump(mode="json") for item in self.state.leftovers],
            type="RollbackIncomplete",
            non_retryable=True,
        )

    async def undo_until_done(
        self,
        saga: Saga,
        undo: Undo,
        *,
        what: str,
        retrying: tuple[str, str],
        retry: Callable[[], bool],
        escalate_after: timedelta,
        expire_after: timedelta,
    ) -> list[EnsureResult]:
        """Undo the saga; while steps stay on it and ``retry()`` holds, wait at ``retry_rollback`` (the objects left
        by a failed ``what``) and undo them again at the stage and details ``retrying``. What was undone; the saga
        keeps the steps whose undo still failed (their objects in ``state.leftovers``) when the gate expired."""
        undone, self.state.leftovers = await saga.undo_keeping_failures(undo)
        while saga and retry():
            try:
                await self.state.wait_gate(
                    RETRY_ROLLBACK,
                    f"{len(self.state.leftovers)} objects left by a failed {what}: {self.left()}",
                    escalate_after,
                    expire_after,
                )
            except ApplicationError:
                break
            self.state.gates.set_stage(*retrying)
            more, self.state.leftovers = await saga.undo_keeping_failures(undo)
            undone += more
        return undone

    async def roll_back(
        self, saga: Saga, undo: Undo, escalate_after: timedelta, expire_after: timedelta
    ) -> list[EnsureResult]:
        """A tenant run's rollback: undo the saga; wait at ``retry_rollback`` while objects are left;
        ``RollbackIncomplete`` on expiry."""
        if not self.state.patches.has(RETRY_ROLLBACK_PATCH):
            return await saga.unwind(undo)
        undone = await self.undo_until_done(
            saga,
            undo,
            what="undo",
            retrying=("rolling-back", "Retrying the failed undos"),
            retry=lambda: True,
            escalate_after=escalate_after,
            expire_after=expire_after,
        )
        if saga:
            self.state.gates.set_stage("rollback-incomplete", f"Rollback incomplete; left: {self.left()}")
            raise self.incomplete() from None
        return undone
