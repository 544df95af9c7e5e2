"""The Slurm layer against real slurmctld/slurmdbd through the kube emulator's slurmctld pod exec."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities import slurm
from tenantflow.activities.slurm_cli import SlurmCtl
from tenantflow.activities.slurm_partition import partition_problems
from tenantflow.models.results import Outcome, SlurmObject, SlurmPartition
from tenantflow.models.tenant import TenantContract
from tests.activities.slurm.conftest import SLURMD_NODES, SlurmLab, make_contract, step_input

ASSOC = "format=account,user,parentname,fairshare,grptres,grpjobs,maxjobs,grptresmins,qos,defaultqos"


def apply_all(contract: TenantContract) -> list[slurm.StepResult]:
    inp = step_input(contract)
    return [slurm.accounts(inp), slurm.qos(inp), slurm.users(inp), slurm.partition(inp)]


def undo_all(contract: TenantContract, results: list[slurm.StepResult]) -> list[Outcome]:
    outcomes = []
    for step, res in reversed(list(zip(("accounts", "qos", "users", "partition"), results, strict=True))):
        undone = slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))
        outcomes += [r.outcome for r in undone]
    return outcomes


def assocs(lab: SlurmLab, contract: TenantContract) -> list[str]:
    accounts = f"accounts={contract.slug},{contract.team_account}"
    return sorted(lab.sh("sacctmgr", "show", "assoc", "where", accounts, ASSOC, "-P", "-n").splitlines())


def test_preflight_ok_and_apply_creates_the_runbook_values(lab: SlurmLab, contract: TenantContract) -> None:
    pre = slurm.preflight(step_input(contract))
    assert [f for f in pre.findings if not f.ok] == []
    results = apply_all(contract)
    try:
        short, team = contract.short, contract.team_account
        qos = f"interactive-{short},normal-{short}"
        assert assocs(lab, contract) == sorted(
            [
                f"{contract.slug}||root|300|gres/gpu=16|200|||{qos}|normal-{short}",
                f"{team}||{contract.slug}|200|||||{qos}|normal-{short}",
                f"{team}|alice||parent|||20|gres/gpu=240000|{qos}|normal-{short}",
                f"{team}|bob||parent|||20|gres/gpu=240000|{qos}|normal-{short}",
            ]
        )
        assert sorted(
            lab.sh(
                "sacctmgr", "show", "qos", f"names={qos}", "format=name,priority,grptres,maxwall,flags", "-P", "-n"
            ).splitlines()
        ) == [f"interactive-{short}|200|gres/gpu=8|04:00:00|", f"normal-{short}|100|gres/gpu=16|1-00:00:00|DenyOnLimit"]
        assert (
            lab.sh("sacctmgr", "show", "account", contract.slug, "format=description,organization", "-P", "-n").strip()
            == f"{contract.display_name.lower()}|{contract.slug}"
        )
        part = lab.sh("scontrol", "show", "partition", contract.slug)
        for expected in (
            "Nodes=gpu-[01-02]",
            f"AllowAccounts={contract.slug},{team}",
            "Default=NO",
            "State=UP",
            "MaxTime=1-00:00:00",
            "DefaultTime=01:00:00",
            "PreemptMode=OFF",
            "OverSubscribe=EXCLUSIVE",
        ):
            assert expected in part.split()
        assert all(r.outcome == Outcome.created for res in results for r in res.results if r.kind != "account-qos")

        before = len(lab.sacctmgr_writes())
        again = apply_all(contract)
        assert len(lab.sacctmgr_writes()) == before
        assert {r.outcome for res in again for r in res.results} == {Outcome.unchanged}
        assert all(s.action == "unchanged" for s in slurm.plan(step_input(contract)))
    finally:
        outcomes = undo_all(contract, results)
    assert Outcome.deleted in outcomes
    assert assocs(lab, contract) == []
    assert lab.sh("sacctmgr", "show", "qos", f"names=normal-{contract.short}", "-P", "-n").strip() == ""
    assert contract.slug not in lab.sh("sinfo", "-h", "-o", "%P")
    assert f"{contract.slug}.conf" not in (
        lab.store.get("", "configmaps", "slurm-partitions", "slurm-control").get("data") or {}
    )
    assert set(undo_all(contract, results)) <= {Outcome.absent, Outcome.updated}


def test_drift_is_updated_and_undo_reverts_it(lab: SlurmLab, contract: TenantContract) -> None:
    results = apply_all(contract)
    try:
        lab.sh(
            "sacctmgr",
            "-i",
            "modify",
            "user",
            "where",
            "name=alice",
            f"account={contract.team_account}",
            "set",
            "MaxJobs=5",
        )
        fixed = slurm.users(step_input(contract))
        assert [(r.name, r.outcome) for r in fixed.results] == [("alice", Outcome.updated), ("bob", Outcome.unchanged)]
        assert fixed.results[0].data_as(SlurmObject).previous == {"MaxJobs": "5"}
        assert "|alice||parent|||20|" in "\n".join(assocs(lab, contract))
    finally:
        undo_all(contract, results)


def test_preflight_flags_foreign_account_and_unknown_nodes(lab: SlurmLab) -> None:
    contract = make_contract(lab.target)
    lab.sh("sacctmgr", "-i", "add", "account", contract.slug, "Organization=someone-else", "Cluster=production")
    try:
        pre = slurm.preflight(step_input(contract, nodes=["gpu-01", "gpu-99"]))
        bad = {f.check: f.message for f in pre.findings if not f.ok}
        assert bad["slurm.account"] == f"account {contract.slug} belongs to organization someone-else"
        assert bad["slurm.nodes_known"] == "Slurm does not know nodes gpu-99"
        assert lab.sacctmgr_writes()[-1:] != [["sacctmgr", "-i"]]
    finally:
        lab.sh("sacctmgr", "-i", "delete", "account", contract.slug)


def test_users_before_qos_fails_clearly(lab: SlurmLab, contract: TenantContract) -> None:
    with pytest.raises(ApplicationError, match=r"slurm\.qos must run before slurm\.users"):
        slurm.users(step_input(contract))


def test_partition_nodes_follow_the_reservation(lab: SlurmLab) -> None:
    contract = make_contract(lab.target)
    inp = step_input(contract, nodes=list(SLURMD_NODES))
    res = slurm.partition(inp)
    try:
        assert res.results[0].data_as(SlurmPartition).nodes == "gpu-[01-02]"
        assert partition_problems(SlurmCtl.connect(lab.target), contract, list(SLURMD_NODES)) == []
    finally:
        slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=res.results))
