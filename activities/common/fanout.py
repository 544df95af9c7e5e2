"""Per-user work issued a few at a time: the same function over many items, on a bounded thread pool.

A big tenant's layers do one REST call (or a few) per user; done one after the other, a 300-user
tenant waits 300 round trips per layer. :func:`fan_out` runs ``fn`` over the items on at most
``limit`` threads (``TENANTFLOW_FANOUT``, default 8, so an API sees a handful of requests at once,
never hundreds), and heartbeats from the activity's own thread with the progress (``done``/``of``)
while it waits, so a long step is never timed out. Each task runs in a copy of the activity's
context (``contextvars``), so ``activity.info()`` and the logger work inside ``fn``.

Results come back in the items' order. When a call fails, the calls not yet started are
cancelled, the running ones finish, and the first error (in the items' order) is raised as the
loop it replaces would have raised it. Each item is still ensured on its own, with its own
ownership check: only how the calls are issued changes. One ``httpx.Client`` serves all threads
(its docstring: "It can be shared between threads"; encode/httpx pull request 2380).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.settings import settings

T = TypeVar("T")
R = TypeVar("R")

HEARTBEAT_EVERY_S = 5.0
"""How often the waiting thread heartbeats while no call completes (well inside every heartbeat timeout)."""


def fan_out(fn: Callable[[T], R], items: Sequence[T], label: str, limit: int | None = None) -> list[R]:
    """``[fn(item) for item in items]`` on at most ``limit`` threads, heartbeating ``{label: {done, of}}``."""
    width = max(1, min(limit or settings().fanout, len(items)))
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"fanout-{label}") as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, item) for item in items]
        pending: set[Future[R]] = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=HEARTBEAT_EVERY_S, return_when=FIRST_EXCEPTION)
            heartbeat({label: {"done": len(futures) - len(pending), "of": len(futures)}})
            if any(f.exception() is not None for f in finished):
                for future in pending:
                    future.cancel()
                wait(pending)
                break
    for future in futures:
        if not future.cancelled() and (error := future.exception()) is not None:
            raise error
    return [f.result() for f in futures]
