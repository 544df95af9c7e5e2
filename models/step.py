"""What one catalogue step is: an activity's recorded name, its input and result types, its timeouts and its undo.

A :class:`Step` names the activity exactly as Temporal records it (``kube.namespace``),
carries its input and result types (so a workflow's call is checked by mypy, and
``tests/unit/models/test_runbook.py`` checks each entry against the registered
activity function), its timeouts, the plan kinds it writes and the step that undoes
it. The steps themselves are defined in :mod:`models.runbook` (the tenant runs, and the
catalogue of every step) and :mod:`models.enrollment_steps` (worker enrollment and decommission).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, TypeVar

from tenantflow.models.onboarding import UndoInput
from tenantflow.models.results import EnsureResult

I = TypeVar("I")  # noqa: E741 - the step's input type
R = TypeVar("R", covariant=True)

STEP_TIMEOUT = timedelta(minutes=5)
HEARTBEAT = timedelta(seconds=60)
"""Every step has a heartbeat timeout, so a crashed worker's step is retried within a minute rather than at its
start-to-close timeout; steps that run longer heartbeat."""
WAIT_HEARTBEAT = timedelta(seconds=30)
"""The heartbeat timeout of the steps that wait (for conditions, drains, another run): they heartbeat as they poll."""


@dataclass(frozen=True)
class Step(Generic[I, R]):
    """One activity: ``name`` is what Temporal records; it takes an ``I`` and returns an ``R``."""

    name: str
    input: type[I]
    result: type[R]
    summary: str = ""
    """What the step does, in the runbook's words (onboarding's apply and smoke steps show it)."""
    timeout: timedelta = STEP_TIMEOUT
    """Start-to-close timeout of one attempt."""
    heartbeat: timedelta | None = HEARTBEAT
    """Heartbeat timeout; None schedules the activity without one."""
    kinds: tuple[str, ...] = ()
    """The plan kinds this step writes: the plan's ``create`` entries of these kinds are its own."""
    undo: Step[UndoInput, list[EnsureResult]] | None = None
    """The compensation of this step (called with the step's :attr:`short` name in ``UndoInput.step``)."""
    local: bool = False
    """Short and read-only, no heartbeat: a workflow may run it as a local activity (one history event, not six)."""

    @property
    def layer(self) -> str:
        """``kube`` of ``kube.namespace``: the layer whose activity module implements the step."""
        return self.name.partition(".")[0]

    @property
    def short(self) -> str:
        """``namespace`` of ``kube.namespace``: the step's name inside its layer."""
        return self.name.partition(".")[2]
