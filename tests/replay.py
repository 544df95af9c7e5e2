"""Replaying recorded histories: a workflow change that breaks running workflows fails here."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from tenantflow.worker.codec import PLAIN
from tenantflow.worker.registry import WORKFLOWS

HISTORIES = Path(__file__).resolve().parent / "histories"


def recorded_histories() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


async def replay(path: Path) -> None:
    """Replay one history JSON file; raises on non-determinism."""
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await Replayer(workflows=WORKFLOWS, data_converter=PLAIN).replay_workflow(history)
