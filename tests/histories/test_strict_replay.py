"""Every recorded history replays with today's code giving each activity exactly the recorded arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenantflow.worker.registry import WORKFLOWS
from tests.histories.strict_replay import replay_strictly
from tests.replay import recorded_histories


@pytest.mark.parametrize("path", recorded_histories(), ids=lambda p: p.stem)
async def test_history_replays_with_the_recorded_activity_arguments(path: Path) -> None:
    await replay_strictly(path, WORKFLOWS)
