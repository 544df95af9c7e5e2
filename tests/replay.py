"""The recorded histories: a workflow change that breaks running workflows fails their replay (tests/test_replay.py)."""

from __future__ import annotations

from pathlib import Path

HISTORIES = Path(__file__).resolve().parent / "histories"


def recorded_histories() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))
