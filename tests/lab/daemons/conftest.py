"""Session fixtures: a real slapd and a real Slurm stack (with slurmd for two nodes) in tmp dirs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenantflow.lab.daemons.process import free_port, is_running, recorded, stop_all
from tenantflow.lab.daemons.slapd import SlapdHandle, start_slapd
from tenantflow.lab.daemons.slurm import SlurmHandle, start_slurm

SLURMD_NODES = ["gpu-01", "gpu-02"]


def _require(*binaries: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("the real daemons run as root")
    missing = [b for b in binaries if shutil.which(b) is None]
    if missing:
        pytest.skip(f"missing {missing}: run scripts/install-system-packages.sh")


def _stop_and_check(state_dir: Path) -> None:
    daemons = recorded(state_dir)
    stop_all(state_dir)
    survivors = [d for d in daemons if is_running(d)]
    assert not survivors, f"still running after stop_all: {survivors}"


@pytest.fixture(scope="session")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlapdHandle]:
    _require("slapd", "ldapsearch")
    state_dir = tmp_path_factory.mktemp("ldap")
    handle = start_slapd(state_dir, free_port())
    yield handle
    _stop_and_check(state_dir)


def deep_folder(base: Path) -> Path:
    """A folder below ``base`` deep enough that a slurmstepd socket in ``<it>/slurm/spool/<node>`` would pass the
    108-byte limit of a Unix socket path (as under a CI worker's numbered temporary folders): jobs must still run."""
    step_socket = "/slurm/spool/gpu-01/gpu-01_1.4294967291"
    folder = base / ("deep-" + "d" * max(1, 110 - len(str(base)) - len(step_socket)))
    folder.mkdir()
    return folder


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmHandle]:
    _require("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sacctmgr")
    state_dir = deep_folder(tmp_path_factory.mktemp("slurm"))
    handle = start_slurm(state_dir, slurmd_nodes=SLURMD_NODES)
    yield handle
    _stop_and_check(state_dir)
