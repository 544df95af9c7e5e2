"""A big tenant's user associations against the real slurmdbd: one ``sacctmgr add user Name=a,b,...`` per hundred
users, one ``modify user where name=a,b`` for users that drifted alike, nothing on a re-run, one ``delete user where
name=a,b,...`` per hundred users on undo, and the per-user outcomes (created, updated with the previous values,
unchanged; deleted, then absent) exactly as one command per user gave them."""

from __future__ import annotations

import secrets

from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.slurm.user_batch import BATCH
from tenantflow.models.results import Outcome, SlurmObject
from tenantflow.models.tenant import TenantContract
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input

USERS = BATCH + 20


def writes_since(lab: SlurmLab, before: int) -> list[list[str]]:
    return lab.sacctmgr_writes()[before:]


def user_rows(lab: SlurmLab, contract: TenantContract) -> dict[str, str]:
    out = lab.sh(
        "sacctmgr", "show", "assoc", "where", f"accounts={contract.user_account}", "format=user,maxjobs,qos", "-P", "-n"
    )
    return {line.split("|", 1)[0]: line for line in out.splitlines() if line.split("|", 1)[0]}


def test_a_big_tenants_users_are_added_fixed_and_undone_in_batches(lab: SlurmLab) -> None:
    prefix = f"b{secrets.token_hex(2)}"
    contract = make_contract(lab.target, tuple(f"{prefix}u{n:03d}" for n in range(USERS)))
    lab.resolve(*contract.usernames)
    inp = step_input(contract)
    made = [slurm.accounts(inp), slurm.qos(inp)]
    try:
        before = len(lab.sacctmgr_writes())
        users = slurm.users(inp)
        made.append(users)
        adds = writes_since(lab, before)
        assert [argv[2:4] for argv in adds] == [["add", "user"], ["add", "user"]]
        assert [r.name for r in users.results] == contract.usernames
        assert {r.outcome for r in users.results} == {Outcome.created}
        rows = user_rows(lab, contract)
        assert sorted(rows) == sorted(contract.usernames)
        assert all(f"|{contract.slurm.user_max_jobs}|" in row for row in rows.values())

        drifted = contract.usernames[3], contract.usernames[BATCH + 5]
        lab.sh(
            "sacctmgr", "-i", "modify", "user", "where", f"name={','.join(drifted)}",
            f"account={contract.user_account}", "set", "MaxJobs=5",
        )  # fmt: skip
        before = len(lab.sacctmgr_writes())
        fixed = slurm.users(inp)
        modifies = writes_since(lab, before)
        assert len(modifies) == 1 and f"name={','.join(drifted)}" in modifies[0]
        outcomes = {r.name: r.outcome for r in fixed.results}
        assert {n for n, o in outcomes.items() if o is Outcome.updated} == set(drifted)
        assert all(outcomes[n] is Outcome.unchanged for n in contract.usernames if n not in drifted)
        assert all(r.data_as(SlurmObject).previous == {"MaxJobs": "5"} for r in fixed.results if r.name in drifted)
        assert all(f"|{contract.slurm.user_max_jobs}|" in row for row in user_rows(lab, contract).values())

        before = len(lab.sacctmgr_writes())
        again = slurm.users(inp)
        assert writes_since(lab, before) == []
        assert {r.outcome for r in again.results} == {Outcome.unchanged}

        undo_users = slurm.UndoInput(contract=contract, facts=users.facts, step="users", results=users.results)
        before = len(lab.sacctmgr_writes())
        undone = slurm.undo(undo_users)
        made.pop()
        assert [argv[2:4] for argv in writes_since(lab, before)] == [["delete", "user"], ["delete", "user"]]
        assert [(r.name, r.outcome) for r in undone] == [(n, Outcome.deleted) for n in reversed(contract.usernames)]
        assert user_rows(lab, contract) == {}
        before = len(lab.sacctmgr_writes())
        assert {r.outcome for r in slurm.undo(undo_users)} == {Outcome.absent}
        assert writes_since(lab, before) == []
    finally:
        for step, res in reversed(list(zip(("accounts", "qos", "users"), made, strict=False))):
            slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))
    assert user_rows(lab, contract) == {}
