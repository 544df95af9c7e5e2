"""Every history under tests/histories/ replays against today's workflow code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay import recorded_histories, replay


def test_histories_are_recorded() -> None:
    assert recorded_histories(), "no recorded histories under tests/histories/"


@pytest.mark.parametrize("path", recorded_histories(), ids=lambda p: p.stem)
async def test_history_replays(path: Path) -> None:
    await replay(path)
