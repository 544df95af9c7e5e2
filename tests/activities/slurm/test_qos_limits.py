"""Every entry of the QoS limit table (:data:`activities.slurm.qos.QOS_LIMITS`) against the real sacctmgr.

For each limit the test sets the runbook's value with the entry's sacctmgr key, reads it back through the entry's
``format=`` column, compares it with the entry's comparison, then removes it with the entry's cleared value. The
expected values are written out here (the runbook's QoS values and what sacctmgr prints for them), so a new
limit needs its line below as well as its table entry.
"""

from __future__ import annotations

import secrets

import pytest

from tenantflow.activities.slurm.qos import QOS_LIMITS, QosLimit
from tests.activities.slurm.conftest import SlurmLab, make_contract

RUNBOOK = {
    # key: (the value set, as `sacctmgr show qos` prints it, as it prints once cleared, cleared still reads as set)
    "Priority": ("100", "100", "0", False),
    "GrpTRES": ("gres/gpu=64", "gres/gpu=64", "", False),
    "MaxWall": ("24:00:00", "1-00:00:00", "", False),
    "Flags": ("DenyOnLimit", "DenyOnLimit", "", False),
    # Slurm stores PreemptMode=OFF as the cluster's mode and prints "cluster", set or cleared alike
    "PreemptMode": ("OFF", "cluster", "cluster", True),
}


def test_the_table_holds_exactly_the_runbook_limits() -> None:
    assert [limit.key for limit in QOS_LIMITS] == list(RUNBOOK)


def test_the_contract_values_are_the_runbook_qos(lab: SlurmLab) -> None:
    c = make_contract(lab.target)  # 16 GPUs; the default normal and interactive QoS of the runbook
    normal = {limit.key: limit.wanted(c, c.slurm.normal_qos) for limit in QOS_LIMITS}
    interactive = {limit.key: limit.wanted(c, c.slurm.interactive_qos) for limit in QOS_LIMITS}
    assert normal == {
        "Priority": "100",
        "GrpTRES": "gres/gpu=16",
        "MaxWall": "24:00:00",
        "Flags": "DenyOnLimit",
        "PreemptMode": None,
    }
    assert interactive == {
        "Priority": "200",
        "GrpTRES": "gres/gpu=8",
        "MaxWall": "04:00:00",
        "Flags": "",
        "PreemptMode": "OFF",
    }


def _shown(lab: SlurmLab, name: str, column: str) -> str:
    return lab.sh("sacctmgr", "show", "qos", name, f"format={column}", "-P", "-n").strip()


def _set(lab: SlurmLab, name: str, key: str, value: str) -> None:
    lab.sh("sacctmgr", "-i", "modify", "qos", "where", f"name={name}", "set", f"{key}={value}")


@pytest.mark.parametrize("limit", QOS_LIMITS, ids=lambda limit: limit.key)
def test_each_limit_is_set_read_back_and_cleared_by_its_entry(lab: SlurmLab, limit: QosLimit) -> None:
    value, shown, shown_cleared, cleared_reads_as_set = RUNBOOK[limit.key]
    name = f"qos-{secrets.token_hex(3)}"
    lab.sh("sacctmgr", "-i", "add", "qos", name)
    try:
        _set(lab, name, limit.key, value)
        assert _shown(lab, name, limit.column) == shown
        assert limit.same(value, shown)
        _set(lab, name, limit.key, limit.cleared)
        assert _shown(lab, name, limit.column) == shown_cleared
        assert limit.same(value, shown_cleared) is cleared_reads_as_set
    finally:
        lab.sh("sacctmgr", "-i", "delete", "qos", name)
