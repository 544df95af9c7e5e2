"""poll_until: stops when done, on the time budget or the attempt budget, backs off, never sleeps past the budget."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.errors import TRANSIENT, transient
from tenantflow.activities.common.polling import Backoff, growing, poll_until


class FakeClock:
    """A clock that moves only when the poller sleeps, so the test asserts behaviour, never timings."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def answers(*values: int) -> Iterator[int]:
    yield from values
    while True:
        yield values[-1]


def test_returns_the_first_answer_that_is_done() -> None:
    clock, seen = FakeClock(), answers(1, 2, 3, 4)
    polled = poll_until(lambda: next(seen), lambda v: v >= 3, every=Backoff(1.0), sleep=clock.sleep, clock=clock)
    assert (polled.value, polled.done, polled.attempts) == (3, True, 3)
    assert clock.sleeps == [1.0, 1.0]


def test_backs_off_up_to_the_ceiling() -> None:
    clock, seen = FakeClock(), answers(0, 0, 0, 0, 0, 1)
    poll_until(lambda: next(seen), bool, every=Backoff(1.0, 2.0, 5.0), sleep=clock.sleep, clock=clock)
    assert clock.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_time_budget_ends_the_wait_with_the_last_answer_and_never_sleeps_past_it() -> None:
    clock, seen = FakeClock(), answers(7, 8, 9)
    polled = poll_until(
        lambda: next(seen), lambda v: v > 100, every=Backoff(2.0), budget_s=5.0, sleep=clock.sleep, clock=clock
    )
    assert (polled.value, polled.done) == (9, False)
    assert clock.sleeps == [2.0, 2.0, 1.0]


def test_attempt_budget_counts_probes() -> None:
    clock, calls = FakeClock(), []
    polled = poll_until(
        lambda: calls.append(1) or len(calls),
        lambda v: False,
        every=Backoff(0.5),
        attempts=3,
        sleep=clock.sleep,
        clock=clock,
    )
    assert (polled.value, polled.done, polled.attempts) == (3, False, 3)
    assert len(clock.sleeps) == 2


def test_outside_an_activity_the_heartbeat_detail_is_still_computed_and_harmless() -> None:
    clock, seen, details = FakeClock(), answers(0, 1), []
    polled = poll_until(
        lambda: next(seen), bool, every=Backoff(0.1), sleep=clock.sleep, clock=clock, detail=lambda v: details.append(v)
    )
    assert polled.done and details == [0]


def test_inside_an_activity_each_wait_heartbeats_its_detail() -> None:
    env, beats, seen, clock = ActivityEnvironment(), [], answers(0, 0, 1), FakeClock()
    env.on_heartbeat = lambda *details: beats.append(details)
    polled = env.run(
        lambda: poll_until(
            lambda: next(seen), bool, every=Backoff(0.1), sleep=clock.sleep, clock=clock, detail=lambda v: {"value": v}
        )
    )
    assert polled.done
    assert beats == [({"value": 0},), ({"value": 0},)]


def test_a_growing_backoff_starts_quick_and_is_capped() -> None:
    backoff = growing(0.1, max_s=2.0)
    delays = [backoff.first_s]
    for _ in range(12):
        delays.append(backoff.next(delays[-1]))
    assert delays[:4] == pytest.approx([0.1, 0.15, 0.225, 0.3375])
    assert max(delays) == 2.0 and delays[-1] == 2.0


def flaky(*steps: int | Exception) -> Callable[[], int]:
    """A probe answering ``steps`` in order, raising those that are errors."""
    queue = list(steps)

    def probe() -> int:
        step = queue.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    return probe


def lost() -> ApplicationError:
    return ApplicationError("kubernetes x answered HTTP 503: unavailable", type=TRANSIENT)


def test_a_tolerated_transient_failure_is_a_try_without_news_and_the_wait_goes_on() -> None:
    clock = FakeClock()
    probe = flaky(0, lost(), lost(), 1)
    polled = poll_until(probe, bool, every=Backoff(1.0), sleep=clock.sleep, clock=clock, tolerate=transient)
    assert (polled.value, polled.done, polled.attempts) == (1, True, 4)


def test_a_wait_ending_on_a_tolerated_failure_keeps_the_last_answer() -> None:
    clock = FakeClock()
    polled = poll_until(
        flaky(5, lost(), lost()),
        lambda v: v > 9,
        every=Backoff(1.0),
        attempts=3,
        sleep=clock.sleep,
        clock=clock,
        tolerate=transient,
    )
    assert (polled.value, polled.done, polled.attempts) == (5, False, 3)


def test_a_wait_that_never_had_an_answer_raises_the_last_failure() -> None:
    clock = FakeClock()
    with pytest.raises(ApplicationError, match="503"):
        poll_until(
            flaky(lost(), lost()),
            bool,
            every=Backoff(1.0),
            attempts=2,
            sleep=clock.sleep,
            clock=clock,
            tolerate=transient,
        )


@pytest.mark.parametrize(
    "error",
    [ApplicationError("forbidden", type="Forbidden"), ValueError("not a dependency's answer")],
)
def test_an_error_not_tolerated_ends_the_wait_at_once(error: Exception) -> None:
    clock = FakeClock()
    with pytest.raises(type(error)):
        poll_until(flaky(0, error, 1), bool, every=Backoff(1.0), sleep=clock.sleep, clock=clock, tolerate=transient)
    assert clock.sleeps == [1.0]


def test_without_tolerate_a_transient_failure_ends_the_wait() -> None:
    clock = FakeClock()
    with pytest.raises(ApplicationError):
        poll_until(flaky(0, lost(), 1), bool, every=Backoff(1.0), sleep=clock.sleep, clock=clock)
