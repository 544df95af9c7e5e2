"""The bench tests' own lab (needs root for slapd and Slurm), started once per session and stopped by PID."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenantflow.lab.endpoints import LabEndpoints
from tests.labfixture import whole_lab


@pytest.fixture(scope="session")
def bench_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """The bench tests' own lab."""
    yield from whole_lab(tmp_path_factory, "bench-lab")
