"""A test that pytest-timeout stops does not go on running inside the next test (tests/loop_hygiene.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = ["pytester"]

TESTS = """
import asyncio
import os

import pytest


@pytest.mark.timeout(1)
async def test_stopped_by_the_timeout() -> None:
    os.environ["HYGIENE_PROBE"] = "first"
    try:
        await asyncio.sleep(3)
    finally:
        os.environ.pop("HYGIENE_PROBE", None)


async def test_next_keeps_its_environment() -> None:
    os.environ["HYGIENE_PROBE"] = "second"
    await asyncio.sleep(4)
    assert os.environ.pop("HYGIENE_PROBE", None) == "second"
"""

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
timeout_method = signal
"""


@pytest.mark.parametrize("hygiene", [True, False], ids=["with the fixture", "without it"])
def test_a_timed_out_tests_finally_runs_before_the_next_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, hygiene: bool
) -> None:
    pytester.makeini(INI)
    pytester.makeconftest("from tests.loop_hygiene import no_task_outlives_its_test\n" if hygiene else "")
    pytester.makepyfile(test_probe=TESTS)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    outcome = result.parseoutcomes()
    assert outcome.get("failed") == (1 if hygiene else 2), result.stdout.str()
    assert outcome.get("passed", 0) == (1 if hygiene else 0), result.stdout.str()
