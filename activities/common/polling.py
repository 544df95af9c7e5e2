"""Waiting for the world: one polling loop with backoff, a budget (time or attempts) and heartbeats.

:func:`poll_until` calls ``probe`` until ``done`` holds for its answer, sleeping
between tries along :class:`Backoff` (never past the budget), and heartbeats each
answer it is still waiting on (when running inside an activity), so Temporal
knows the attempt is alive. It never raises on its own: it returns a
:class:`Polled` saying whether the wait converged and with the last answer, and
the caller raises its own error (or carries on) with the message its step owns.
With ``tolerate``, a probe that fails with an error it accepts (a dependency's
transient answer: :func:`activities.common.errors.transient`) is a try without news, not the end of the
wait: one lost read in a minute of polling should not throw the whole attempt
away, and its writes with it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from temporalio import activity

from tenantflow.activities.common.settings import settings

T = TypeVar("T")

_NOTHING: object = object()


@dataclass(frozen=True)
class Backoff:
    """Sleep ``first_s``, then ``factor`` times longer each try, at most ``max_s``."""

    first_s: float
    factor: float = 1.0
    max_s: float = math.inf

    def next(self, delay: float) -> float:
        return min(delay * self.factor, self.max_s)


def growing(first_s: float, max_s: float = 5.0) -> Backoff:
    """Start at ``first_s`` (quick to see a fast change), grow by half each try, at most ``max_s``: a wait that
    lasts minutes costs a request every few seconds, not ten a second, on a Hub or API server other tenants
    share."""
    return Backoff(first_s, 1.5, max_s)


def from_poll_interval(factor: float = 1.5, max_s: float = 5.0) -> Backoff:
    """A backoff starting at the configured poll interval (``TENANTFLOW_POLL_INTERVAL``)."""
    return Backoff(settings().poll_interval_s, factor, max_s)


@dataclass(frozen=True)
class Polled(Generic[T]):
    """How a wait ended: the last answer, whether it satisfied ``done``, and how many probes it took."""

    value: T
    done: bool
    attempts: int


def heartbeat(*details: object) -> None:
    """``activity.heartbeat`` when running in an activity (a plain call, as in a unit test, has no one to tell; a
    local activity has no heartbeat: its worker holds the workflow task meanwhile)."""
    if activity.in_activity() and not activity.info().is_local:
        activity.heartbeat(*details)


def poll_until(
    probe: Callable[[], T],
    done: Callable[[T], bool],
    *,
    every: Backoff,
    budget_s: float | None = None,
    attempts: int | None = None,
    detail: Callable[[T], object] | None = None,
    tolerate: Callable[[Exception], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Polled[T]:
    """Probe until ``done(answer)``, the time budget or the number of attempts runs out (no budget: forever).

    Between tries it heartbeats ``detail(answer)`` (with no ``detail``, a bare heartbeat) and sleeps; inside an
    activity it also logs each new ``detail``, so the worker's log shows what a long wait is waiting on. A probe
    failing with an error ``tolerate`` accepts counts as a try that changed nothing (the last answer stands);
    when the wait ends without any answer, that error is raised."""
    deadline = clock() + budget_s if budget_s is not None else math.inf
    delay = every.first_s
    tries = 0
    shown: object = None
    value: Any = _NOTHING
    while True:
        failure: Exception | None = None
        try:
            value = probe()
        except Exception as error:
            if tolerate is None or not tolerate(error):
                raise
            failure = error
        tries += 1
        if failure is None and done(value):
            return Polled(value, True, tries)
        left = deadline - clock()
        if left <= 0 or (attempts is not None and tries >= attempts):
            if value is _NOTHING and failure is not None:
                raise failure
            return Polled(value, False, tries)
        note = None if detail is None or value is _NOTHING else detail(value)
        heartbeat(*(() if note is None else (note,)))
        if note is not None and note != shown and activity.in_activity():
            activity.logger.info("waiting: %s", note)
            shown = note
        sleep(min(delay, left))
        delay = every.next(delay)
