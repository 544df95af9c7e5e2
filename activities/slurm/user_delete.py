"""User associations deleted in batches (the undo of ``slurm.users``): a few sacctmgr commands, not one per user.

``sacctmgr delete user where name=a,b,c account=X cluster=C`` removes every listed user's association with
the account in one request to slurmdbd (sacctmgr(1): ``Names=<user_name>[,<user_name>,...]``, the same
name list :mod:`activities.slurm.user_batch` uses to add them). Which associations existed is read first
with ``sacctmgr show assoc where users=... accounts=X cluster=C`` (one command a batch), so each user is
reported deleted or already absent, as the one-command-per-user undo did from sacctmgr's answer. An
offboarding of 300 users then costs six execs in the slurmctld pod instead of 300.
"""

from __future__ import annotations

from collections.abc import Callable

from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.slurm_cli import (
    ASSOC_FORMAT,
    BATCH,
    SlurmCtl,
    parse_assocs,
    sacctmgr_write,
    word,
    words,
)
from tenantflow.models.results import EnsureResult, Outcome, SlurmObject

NOTHING_DELETED = "Nothing deleted"


def delete_users_argv(names: list[str], account: str, cluster: str) -> list[str]:
    where = {"name": words(names), "account": word(account), "cluster": word(cluster)}
    return sacctmgr_write("delete", "user", "", where=where)


def delete_users(
    ctl: SlurmCtl, results: list[EnsureResult], failed: Callable[[str, str], Exception]
) -> dict[tuple[str, str], Outcome]:
    """Delete the associations of the ``user`` results (by name and account), :data:`BATCH` names a command,
    heartbeating; return each one's outcome (deleted, or absent when it was already gone). ``failed(name,
    detail)`` is raised when sacctmgr refuses a batch (named by its first user)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for res in results:
        data = res.data_as(SlurmObject)
        groups.setdefault((data.account or "", data.cluster or ""), []).append(res.name)
    outcomes: dict[tuple[str, str], Outcome] = {}
    for (account, cluster), names in groups.items():
        for start in range(0, len(names), BATCH):
            batch = names[start : start + BATCH]
            heartbeat({"undo": {"users": start, "of": len(names), "account": account}})
            where = {"cluster": word(cluster), "accounts": word(account), "users": words(batch)}
            present = {a.user for a in parse_assocs(ctl.show("assoc", where, ASSOC_FORMAT))}
            gone = [name for name in batch if name in present]
            if gone:
                out = ctl.run(delete_users_argv(gone, account, cluster), check=False)
                if out.exit_code != 0 and NOTHING_DELETED not in out.stdout + out.stderr:
                    raise failed(gone[0], out.stderr or out.stdout)
            for name in batch:
                outcomes[(name, account)] = Outcome.deleted if name in present else Outcome.absent
    return outcomes
