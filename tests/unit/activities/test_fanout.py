"""fan_out: results in the items' order, at most ``limit`` calls in flight, the activity's context inside every
call, progress heartbeats, and the first failure raised as it was with the calls not yet started never made."""

from __future__ import annotations

import threading
import time

import pytest
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.fanout import fan_out


def test_results_keep_the_items_order_and_no_more_than_limit_run_at_once() -> None:
    lock, running, peak = threading.Lock(), [0], [0]

    def square(n: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01 * (n % 3))
        with lock:
            running[0] -= 1
        return n * n

    assert fan_out(square, list(range(40)), "test", limit=4) == [n * n for n in range(40)]
    assert 1 < peak[0] <= 4


def test_every_call_sees_the_activity_and_progress_is_heartbeaten() -> None:
    env = ActivityEnvironment()
    beats: list[object] = []
    env.on_heartbeat = lambda *details: beats.extend(details)

    def run() -> list[str]:
        return fan_out(lambda n: f"{activity.info().activity_type}-{n}", list(range(10)), "users", limit=3)

    assert env.run(run) == [f"unknown-{n}" for n in range(10)]
    assert beats and beats[-1] == {"users": {"done": 10, "of": 10}}


def test_the_first_failure_is_raised_as_it_was_and_later_items_are_not_started() -> None:
    started: list[int] = []

    def fragile(n: int) -> int:
        started.append(n)
        if n == 2:
            raise ValueError("user 2 is refused")
        time.sleep(0.05)
        return n

    with pytest.raises(ValueError, match="user 2 is refused"):
        fan_out(fragile, list(range(50)), "test", limit=2)
    assert len(started) < 50
