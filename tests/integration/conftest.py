"""The lab, started once for the integration tests (needs root for slapd and Slurm)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.endpoints import LabEndpoints
from lab.supervisor import down, up


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    if os.geteuid() != 0:
        pytest.skip("the lab's real slapd and Slurm need root")
    state = Path(tmp_path_factory.mktemp("lab", numbered=True))
    endpoints = up(state)
    try:
        yield endpoints
    finally:
        down(state)
