"""The direct half of the durability tax retries an activity exactly as the workflow's retry policy would."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from tenantflow.bench.lab import retried

POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(milliseconds=4),
    maximum_attempts=4,
    non_retryable_error_types=["Conflict"],
)


class Flaky:
    """Raises ``errors`` in turn, then answers ``done``; counts its calls."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, arg: str) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return f"done {arg}"


async def test_a_transient_refusal_is_retried_until_it_passes() -> None:
    fn = Flaky(ApplicationError("association not loaded", type="Unavailable"), ConnectionError("reset"))
    assert await retried(fn, "smoke", POLICY) == "done smoke"
    assert fn.calls == 3


async def test_an_error_type_the_policy_names_fails_at_once() -> None:
    fn = Flaky(ApplicationError("node taken", type="Conflict"))
    with pytest.raises(ApplicationError, match="node taken"):
        await retried(fn, "x", POLICY)
    assert fn.calls == 1


async def test_a_non_retryable_error_fails_at_once() -> None:
    fn = Flaky(ApplicationError("bad field", type="Whatever", non_retryable=True))
    with pytest.raises(ApplicationError, match="bad field"):
        await retried(fn, "x", POLICY)
    assert fn.calls == 1


async def test_attempts_are_bounded_by_the_policy() -> None:
    fn = Flaky(*[ApplicationError(f"try {n}", type="Unavailable") for n in range(10)])
    with pytest.raises(ApplicationError, match="try 3"):
        await retried(fn, "x", POLICY)
    assert fn.calls == 4


async def test_a_coroutine_function_is_awaited() -> None:
    async def answer(arg: str) -> str:
        return arg.upper()

    assert await retried(answer, "ok", POLICY) == "OK"
