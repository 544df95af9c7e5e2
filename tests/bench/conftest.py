"""The bench tests' own lab (needs root for slapd and Slurm), started once per session and stopped by PID."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.endpoints import LabEndpoints
from lab.supervisor import down, up


@pytest.fixture(scope="session")
def bench_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    if os.geteuid() != 0:
        pytest.skip("the lab's real slapd and Slurm need root")
    state = Path(tmp_path_factory.mktemp("bench-lab", numbered=True))
    try:
        yield up(state)
    finally:
        down(state)
