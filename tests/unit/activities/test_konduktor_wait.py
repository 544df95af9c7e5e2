"""A konduktor command that runs longer than a heartbeat interval keeps its activity alive (it heartbeats while it
waits), and one that outlives its timeout is killed and fails naming the command."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.clusters import CLUSTERS_FILE_ENV, KUBECONFIG_ENV
from tenantflow.activities.common.settings import settings
from tenantflow.models.targets import KubeTarget

HUB = KubeTarget(context="hub")


@pytest.fixture
def slow_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``hub`` registered with a kubeconfig file, and a ``konduktor`` that sleeps ``$5`` seconds, then prints it."""
    registry = tmp_path / "clusters.yaml"
    registry.write_text(yaml.safe_dump({"hub": {"kubeconfig": str(tmp_path / "kubeconfig")}}))
    script = tmp_path / "konduktor"
    script.write_text('#!/bin/sh\nsleep "$5"\necho "slept $5"\n')
    script.chmod(0o755)
    monkeypatch.setenv(CLUSTERS_FILE_ENV, str(registry))
    monkeypatch.delenv(KUBECONFIG_ENV, raising=False)
    monkeypatch.setenv("KONDUKTOR_BIN", str(script))
    monkeypatch.setattr(konduktor_cli, "BEAT_S", 0.1)
    settings.cache_clear()
    yield script
    settings.cache_clear()


def test_a_long_command_heartbeats_while_it_runs(slow_cli: Path) -> None:
    beats: list[object] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    assert env.run(konduktor_cli.run, HUB, "0.6") == "slept 0.6\n"
    assert len(beats) >= 3, beats
    assert beats[0] == ("waiting for konduktor 0.6",)


def test_a_command_past_its_timeout_is_killed_and_named(slow_cli: Path) -> None:
    with pytest.raises(ApplicationError, match=r"konduktor .*--context hub 30` did not finish within 0 s") as info:
        ActivityEnvironment().run(konduktor_cli.run, HUB, "30", timeout_s=0.3)
    assert info.value.type == "KonduktorFailed"
