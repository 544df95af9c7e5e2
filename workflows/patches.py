"""Which patches a run has, with one marker standing for several.

Every ``workflow.patched`` that holds writes a marker and a ``TemporalChangeVersion``
upsert into the history (two events). A run that checks a newer patch first, with
:meth:`Patches.imply`, has every patch that patch implies without writing their markers:
runs recorded before it replay through ``workflow.patched`` one patch at a time, as
they were written (Temporal's patching: https://docs.temporal.io/develop/python/versioning).
"""

from __future__ import annotations

from collections.abc import Iterable

from temporalio import workflow


class Patches:
    """The patch checks of one run: ``workflow.patched``, unless an implying patch holds."""

    def __init__(self) -> None:
        self.implied: frozenset[str] = frozenset()

    def imply(self, patch_id: str, implied: Iterable[str]) -> bool:
        """Check ``patch_id`` (before any patch it implies is checked); when the run has it, every ``implied`` patch
        holds from now on without a marker of its own."""
        if not workflow.patched(patch_id):
            return False
        self.implied = frozenset(implied)
        return True

    def has(self, patch_id: str) -> bool:
        """Whether the run takes the code path of ``patch_id``."""
        return patch_id in self.implied or workflow.patched(patch_id)
