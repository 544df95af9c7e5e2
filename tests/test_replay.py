"""Every history under tests/histories/ replays against today's workflow code, strictly: Temporal's replay (the
kind and order of commands) and each activity given exactly the recorded arguments
(:func:`tests.histories.strict_replay.replay_strictly`). The 3.12 check of tests/packaging/test_install.py runs
this file against the installed wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenantflow.worker.registry import WORKFLOWS
from tests.histories.strict_replay import replay_strictly
from tests.replay import recorded_histories


def test_histories_are_recorded() -> None:
    assert recorded_histories(), "no recorded histories under tests/histories/"


@pytest.mark.parametrize("path", recorded_histories(), ids=lambda p: p.stem)
async def test_history_replays_with_the_recorded_activity_arguments(path: Path) -> None:
    await replay_strictly(path, WORKFLOWS)
