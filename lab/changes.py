"""The lab-wide change signal, so that idle controllers and sidecars sleep instead of polling.

A real controller reconciles when its watch delivers an event, plus a resync now and then. The lab's loops
do the same: :class:`Changes` counts every write the lab sees (``lab serve`` bumps it on each event of an
emulated cluster and on each write request to the Authentik and Weka stand-ins), :meth:`Changes.wait`
returns when it moved, and :class:`Resync` is the resync period, short right after a change and doubling
up to a ceiling while nothing happens (so a change that no event announced is still seen, later).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable

RESYNC_MIN_S = 1.0
RESYNC_MAX_S = 30.0


class Changes:
    """A counter of the lab's writes that coroutines can wait on; :meth:`bump` may be called from any thread."""

    def __init__(self) -> None:
        self.revision = 0
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def bump(self, *_: object) -> None:
        """Record a write (the arguments, a store event's, are ignored)."""
        with self._lock:
            self.revision += 1
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # a loop that closed meanwhile has no waiter left
                loop.call_soon_threadsafe(event.set)

    async def wait(self, since: int, timeout_s: float) -> bool:
        """Wait until the revision is past ``since`` or ``timeout_s`` passed; True when it moved."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            if self.revision != since:
                return True
            self._waiters.append(entry)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout_s)
        finally:
            with self._lock:
                self._waiters.remove(entry)
        return self.revision != since


class Resync:
    """The resync period: ``min_s`` after a change, doubling while idle up to ``max_s``."""

    def __init__(self, min_s: float = RESYNC_MIN_S, max_s: float = RESYNC_MAX_S) -> None:
        self.min_s = min_s
        self.max_s = max(min_s, max_s)
        self.period_s = min_s

    def after(self, changed: bool) -> None:
        self.period_s = self.min_s if changed else min(self.period_s * 2, self.max_s)


async def follow(
    changes: Changes, step: Callable[[], Awaitable[None]], interval_s: float, max_idle_s: float = RESYNC_MAX_S
) -> None:
    """Run ``step`` for ever: at most once per ``interval_s``, again as soon as that passed when the lab changed
    meanwhile, else when it changes or the idle resync period (``interval_s`` doubling to ``max_idle_s``) ends."""
    resync = Resync(interval_s, max_idle_s)
    while True:
        seen = changes.revision
        await step()
        await asyncio.sleep(interval_s)
        resync.after(await changes.wait(seen, resync.period_s - interval_s))
