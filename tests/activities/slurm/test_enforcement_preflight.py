"""The preflight refuses a slurmctld that would store the tenant's limits without enforcing them (issue 23 item 3):
the lab's real slurm.conf with ``limits`` taken out of ``AccountingStorageEnforce``, live after a reconfigure."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tenantflow.activities.slurm import steps as slurm
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input


@pytest.fixture
def enforce_without_limits(lab: SlurmLab) -> Iterator[None]:
    """slurm.conf with ``AccountingStorageEnforce=associations,qos`` (no ``limits``) live in slurmctld, for one
    test; the lab's own setting back afterwards."""
    conf = lab.slurm.slurm_conf
    original = conf.read_text()
    assert re.search(r"(?m)^AccountingStorageEnforce=associations,limits,qos$", original)
    conf.write_text(
        original.replace(
            "AccountingStorageEnforce=associations,limits,qos", "AccountingStorageEnforce=associations,qos"
        )
    )
    lab.slurm.reconfigure()
    try:
        yield
    finally:
        conf.write_text(original)
        lab.slurm.reconfigure()


def test_preflight_refuses_when_slurmctld_does_not_enforce_limits(lab: SlurmLab, enforce_without_limits: None) -> None:
    contract = make_contract(lab.target)
    lab.resolve(*contract.usernames)
    pre = slurm.preflight(step_input(contract))
    refused = [f for f in pre.findings if not f.ok]
    assert [f.check for f in refused] == ["slurm.enforcement"], refused
    assert "AccountingStorageEnforce=associations,qos lacks limits" in refused[0].message
    assert "AccountingStorageEnforce=associations,limits,qos" in refused[0].fix
    assert refused[0].blocks
