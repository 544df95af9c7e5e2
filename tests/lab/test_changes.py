"""The lab's change signal (lab/changes.py): a loop wakes on a write, also one made from another thread, backs off
while nothing changes, and runs again right after a change."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from tenantflow.lab.changes import Changes, Resync, follow


async def test_wait_returns_on_a_write_from_another_thread_and_times_out_without_one() -> None:
    changes = Changes()
    assert not await changes.wait(changes.revision, 0.05)
    seen = changes.revision
    threading.Timer(0.05, changes.bump).start()
    assert await asyncio.wait_for(changes.wait(seen, 30), 5)
    assert changes.revision == seen + 1
    assert await changes.wait(seen, 30)  # already moved: no wait at all


def test_the_resync_period_doubles_while_idle_up_to_its_ceiling_and_resets_on_a_change() -> None:
    resync = Resync(1.0, 5.0)
    periods = []
    for changed in (False, False, False, False, True, False):
        resync.after(changed)
        periods.append(resync.period_s)
    assert periods == [2.0, 4.0, 5.0, 5.0, 1.0, 2.0]


class Scripted(Changes):
    """Changes whose waits return at once, changed or not as scripted, recording the timeout each was given."""

    def __init__(self, script: list[bool]) -> None:
        super().__init__()
        self.script = script
        self.timeouts: list[float] = []

    async def wait(self, since: int, timeout_s: float) -> bool:
        if not self.script:
            raise asyncio.CancelledError
        self.timeouts.append(timeout_s)
        return self.script.pop(0)


async def test_follow_waits_longer_while_idle_and_runs_again_soon_after_a_change() -> None:
    changes = Scripted([False, False, False, False, False, True, False])
    runs = 0

    async def step() -> None:
        nonlocal runs
        runs += 1

    with contextlib.suppress(asyncio.CancelledError):
        await follow(changes, step, interval_s=0.01, max_idle_s=0.08)
    assert runs == 8
    # the wait after each run: the period (0.01 s doubling to 0.08 s while idle) less the 0.01 s already slept;
    # the change (sixth wait) brings it back to 0.01 s
    assert changes.timeouts == pytest.approx([0.0, 0.01, 0.03, 0.07, 0.07, 0.07, 0.0])
