"""One ``scontrol reconfigure`` per partition change, after slurmctld's own files show it (issue 23 item 3).

The lab's slurmctld pod answers ``cat`` of slurm.conf and its partitions include as a real controller's container
reads its mounted configuration; its exec handler remembers every command, which is what counts here.
"""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.slurm.partition import confirm_partition
from tenantflow.activities.slurm.partition_backends.include import Include
from tests.activities.slurm.conftest import SLURMD_NODES, SlurmLab, make_contract, step_input

RECONFIGURE = ["scontrol", "reconfigure"]


def reconfigures(lab: SlurmLab) -> int:
    return sum(1 for argv in lab.exec_handler.history if argv == RECONFIGURE)


VOLUME_SYNC_S = 2.0
"""The lab's stand-in for the kubelet's lag in bringing the changed ConfigMap into the slurmctld pod (60-90 s on a
cluster): long enough that reconfiguring while waiting would be seen more than once."""


def test_a_new_partition_costs_one_reconfigure_and_its_removal_one(
    lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab.ctx, "volume_sync_s", VOLUME_SYNC_S)
    contract = make_contract(lab.target)
    inp = step_input(contract, nodes=list(SLURMD_NODES))
    before = reconfigures(lab)
    res = slurm.partition(inp)
    try:
        assert reconfigures(lab) - before == 1
        assert "Nodes=gpu-[01-02]" in lab.sh("scontrol", "show", "partition", contract.slug).split()
        again = slurm.partition(inp)
        assert again.results[0].outcome == "unchanged"
        assert reconfigures(lab) - before == 1, "an unchanged partition needs no reconfigure"
    finally:
        slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=res.results))
    assert reconfigures(lab) - before == 2
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0


def test_no_reconfigure_before_the_files_show_the_change_and_the_budget_is_named(lab: SlurmLab) -> None:
    """Nothing wrote the partition: slurmctld's files never show it, so the wait ends at its budget without a
    single reconfigure, naming the files and the setting."""
    contract = make_contract(lab.target)
    before = reconfigures(lab)
    with pytest.raises(ApplicationError, match=r"still shows no such partition.*SLURM_PARTITION_BUDGET_S") as err:
        confirm_partition(SlurmCtl.connect(lab.target), contract, list(SLURMD_NODES), Include(), budget_s=2)
    assert str(lab.slurm.partitions_conf) in err.value.message
    assert reconfigures(lab) == before
