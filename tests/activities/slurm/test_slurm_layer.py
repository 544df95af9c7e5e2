"""The Slurm layer against real slurmctld/slurmdbd through the kube emulator's slurmctld pod exec."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.slurm.accounting import Ensurer, read_world, undo_results
from tenantflow.activities.slurm.partition import partition_problems
from tenantflow.activities.slurm.partition_backends.include import Include
from tenantflow.activities.slurm.wants import want_accounts
from tenantflow.activities.validate import steps as validate
from tenantflow.lab import pitfalls
from tenantflow.lab.controllers import slurm as slurm_controller
from tenantflow.lab.pitfalls import Pitfall
from tenantflow.models.results import EnsureResult, Kept, Outcome, SlurmObject, SlurmPartition
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


def test_partition_is_confirmed_by_scontrol_without_any_annotation(
    lab: SlurmLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUNK's operator marks nothing on the ConfigMap: the step must trust what slurmctld reports."""
    monkeypatch.setattr(slurm_controller.PartitionsOperator, "_annotate", lambda self, annotations: None)
    contract = make_contract(lab.target)
    inp = step_input(contract)
    res = slurm.partition(inp)
    try:
        assert res.results[0].outcome is Outcome.created
        assert "Nodes=gpu-[01-02]" in lab.sh("scontrol", "show", "partition", contract.slug)
    finally:
        undone = slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=res.results))
    assert [r.outcome for r in undone] == [Outcome.deleted]
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0


def test_partition_undo_finishes_what_a_crashed_attempt_left(lab: SlurmLab) -> None:
    """An undo attempt that put the ConfigMap key back and died before ``scontrol reconfigure`` left slurmctld
    serving the partition: the next attempt does not take the restored key for done, it reconfigures."""
    contract = make_contract(lab.target)
    inp = step_input(contract)
    res = slurm.partition(inp)
    Include().write(contract, None)
    assert "Nodes=gpu-[01-02]" in lab.sh("scontrol", "show", "partition", contract.slug)
    undone = slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=res.results))
    assert [r.outcome for r in undone] == [Outcome.deleted]
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0


UNLIMITED_QOS = {"priority": 100, "max_wall": "UNLIMITED"}


def test_a_partition_max_time_shorter_than_the_contract_fails_by_name_and_is_removed(lab: SlurmLab) -> None:
    contract = make_contract(
        lab.target, partition_max_time="UNLIMITED", contract_wall_limit="UNLIMITED", normal_qos=UNLIMITED_QOS
    )
    pitfalls.switch(lab.ctx.state_dir, Pitfall.short_max_time, True)
    try:
        with pytest.raises(ApplicationError, match=r"slurm\.max_time: MaxTime=12:00:00.*MaxTime=UNLIMITED"):
            slurm.partition(step_input(contract))
    finally:
        pitfalls.switch(lab.ctx.state_dir, Pitfall.short_max_time, False)
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0


def test_accounts_and_qos_carry_the_ownership_marker(lab: SlurmLab, contract: TenantContract) -> None:
    inp = step_input(contract)
    results = [slurm.accounts(inp), slurm.qos(inp)]
    try:
        orgs = lab.sh(
            "sacctmgr", "show", "account", f"{contract.slug},{contract.team_account}", "format=organization", "-P", "-n"
        ).split()
        assert orgs == [contract.slug, contract.slug]
        descriptions = lab.sh(
            "sacctmgr",
            "show",
            "qos",
            f"names=normal-{contract.short},interactive-{contract.short}",
            "format=description",
            "-P",
            "-n",
        ).split()
        assert descriptions == [f"tenantflow:{contract.slug}"] * 2
    finally:
        for step, res in (("qos", results[1]), ("accounts", results[0])):
            slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))


def test_an_account_made_by_someone_else_after_the_plan_is_not_adopted(lab: SlurmLab) -> None:
    contract = make_contract(lab.target)
    lab.sh("sacctmgr", "-i", "add", "account", contract.slug, "Organization=someone-else", "Cluster=production")
    try:
        with pytest.raises(ApplicationError, match=r"not tenantflow's .*Organization=someone-else.*not adopted"):
            slurm.accounts(step_input(contract))
        assert "someone-else" in lab.sh("sacctmgr", "show", "account", contract.slug, "format=organization", "-P", "-n")
    finally:
        lab.sh("sacctmgr", "-i", "delete", "account", contract.slug)


def test_undo_leaves_alone_an_account_and_qos_it_cannot_prove_it_made(lab: SlurmLab) -> None:
    """The saga undoes planned creations by name: objects without our marker stay, reported as left alone."""
    contract = make_contract(lab.target)
    qos = f"normal-{contract.short}"
    lab.sh("sacctmgr", "-i", "add", "account", contract.slug, "Organization=tenant-other", "Cluster=production")
    lab.sh("sacctmgr", "-i", "add", "qos", qos, "Description=made by hand")
    planned = [
        EnsureResult(layer="slurm", kind=kind, name=name, outcome=Outcome.created)
        for kind, name in (("qos", qos), ("account", contract.slug))
    ]
    try:
        undone = slurm.undo(
            slurm.UndoInput(contract=contract, facts=step_input(contract).facts, step="accounts", results=planned)
        )
        assert [r.outcome for r in undone] == [Outcome.unchanged, Outcome.unchanged]
        assert all("left alone" in r.data_as(Kept).kept for r in undone)
        assert qos in lab.sh("sacctmgr", "show", "qos", qos, "format=name", "-P", "-n")
        assert contract.slug in lab.sh("sacctmgr", "show", "account", contract.slug, "format=account", "-P", "-n")
    finally:
        lab.sh("sacctmgr", "-i", "delete", "account", contract.slug)
        lab.sh("sacctmgr", "-i", "delete", "qos", qos)


def test_the_wall_limit_check_reads_the_qos_max_wall_too(lab: SlurmLab) -> None:
    """An UNLIMITED partition does not help when the default QoS stops jobs at 24 h (here set by hand after the
    apply: a contract whose normal QoS is shorter than its wall limit is refused before any write)."""
    contract = make_contract(
        lab.target, partition_max_time="UNLIMITED", contract_wall_limit="UNLIMITED", normal_qos=UNLIMITED_QOS
    )
    lab.resolve(*contract.usernames)
    inp = step_input(contract)
    results = [slurm.accounts(inp), slurm.qos(inp), slurm.partition(inp)]
    try:
        lab.sh("sacctmgr", "-i", "modify", "qos", contract.normal_qos_name, "set", "MaxWall=24:00:00")
        found = validate.partition_max_time(inp)
        assert not found.ok and "MaxTime=UNLIMITED" in found.message
        assert f"QoS normal-{contract.short} MaxWall=1-00:00:00" in found.message and "QoS MaxWall" in found.fix
    finally:
        for step, res in reversed(list(zip(("accounts", "qos", "partition"), results, strict=True))):
            slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))


def test_a_team_account_another_run_added_after_the_read_is_a_conflict_naming_its_owner(
    lab: SlurmLab, contract: TenantContract
) -> None:
    """Two runs racing for one team account: this run read a world without it, the other added it since. The
    failed add is reported as the Conflict naming the owner, alone (not sacctmgr's "Nothing new added"), and undoing
    this attempt keeps the other run's account."""
    ensurer = Ensurer(SlurmCtl.connect(lab.target), contract)
    stale = read_world(ensurer.ctl, contract)
    team = contract.team_account or ""
    lab.sh("sacctmgr", "-i", "add", "account", team, "Organization=tenant-other", "Cluster=production")
    try:
        with pytest.raises(
            ApplicationError,
            match=f"Slurm account {team} already exists .*Organization=tenant-other.*pick another slurm.team_account",
        ) as caught:
            ensurer.apply(want_accounts(contract), stale)
        assert caught.value.__suppress_context__, "sacctmgr's error would be reported as the Conflict's cause"
        undo_results(ensurer.ctl, contract.slug, list(reversed(ensurer.results)))
        shown = lab.sh("sacctmgr", "show", "account", f"{contract.slug},{team}", "format=account,org", "-P", "-n")
        assert shown.split() == [f"{team}|tenant-other"]
    finally:
        lab.sh("sacctmgr", "-i", "delete", "account", team)


def test_users_are_never_added_under_a_team_account_another_tenant_owns(
    lab: SlurmLab, contract: TenantContract
) -> None:
    """The team account a racing run's add overwrote (slurmdbd keeps the last add's Organization) is not ours any
    more: the users step refuses to add associations under it."""
    team, inp = contract.team_account or "", step_input(contract)
    results = [slurm.accounts(inp), slurm.qos(inp)]
    lab.sh("sacctmgr", "-i", "modify", "account", team, "set", "Organization=tenant-other")
    try:
        with pytest.raises(ApplicationError, match=f"account {team} has Organization=tenant-other"):
            slurm.users(inp)
        assert lab.sh("sacctmgr", "show", "assoc", "where", f"account={team}", "format=user", "-P", "-n").split() == []
    finally:
        lab.sh("sacctmgr", "-i", "modify", "account", team, "set", f"Organization={contract.slug}")
        for step, res in reversed(list(zip(("accounts", "qos"), results, strict=True))):
            slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))
