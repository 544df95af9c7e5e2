"""One test's asyncio tasks end with it, on the event loop every test of a pytest-xdist worker shares."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest_asyncio

TASK_CANCEL_WAIT_S = 60.0
"""How long a test's leftover tasks get to run their ``finally`` blocks (a worker's graceful shutdown is 30 s)."""


@pytest_asyncio.fixture(autouse=True)
async def no_task_outlives_its_test() -> AsyncIterator[None]:
    """Cancel the tasks a test left on the session's event loop, and wait for them to unwind.

    pytest-timeout interrupts the loop, not the test's coroutine: without this, a timed-out test's task would go
    on inside the next tests' awaits, and its ``lab_worker`` would restore the environment in the middle of
    another test's run (a later test on the same pytest-xdist worker then fails with no cluster registry)."""
    before = asyncio.all_tasks()
    yield
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    for task in left:
        task.cancel()
    if left:
        await asyncio.wait(left, timeout=TASK_CANCEL_WAIT_S)
