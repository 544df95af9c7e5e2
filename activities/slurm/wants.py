"""The Slurm objects a tenant contract asks for: accounts, QoS, user associations and the partition line.

Ownership markers, written at create time and read back by every undo and adoption
(:mod:`activities.slurm.accounting`): both accounts carry ``Organization=<slug>``
(the runbook's value for the tenant account), each QoS ``Description=tenantflow:<slug>``.

Each :class:`Want` names one sacctmgr object and the values the contract asks for
(sacctmgr keys -> values); :func:`partition_line` is the tenant's ``partitions.conf``
line. Pure functions of the contract: nothing here talks to Slurm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tenantflow.activities.slurm.cli import word, words
from tenantflow.activities.slurm.qos import gpu_tres, qos_values
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.tenant import TenantContract


@dataclass(frozen=True)
class Want:
    """One Slurm object as the contract wants it: ``values`` are sacctmgr keys -> values."""

    kind: str
    name: str
    values: dict[str, str]
    where: dict[str, str] = field(default_factory=dict)


def want_accounts(c: TenantContract) -> list[Want]:
    s = c.slurm
    wants = [
        Want(
            "account",
            c.slug,
            {
                "Description": c.display_name,
                "Organization": c.slug,
                "Parent": "root",
                "Fairshare": str(s.fairshare),
                "GrpTRES": gpu_tres(c.capacity.gpus),
                "GrpJobs": str(s.grp_jobs),
            },
            {"Cluster": s.cluster},
        )
    ]
    if c.team_account:
        wants.append(
            Want(
                "account",
                c.team_account,
                {
                    "Description": f"{c.display_name} ML Team",
                    "Organization": c.slug,
                    "Parent": c.slug,
                    "Fairshare": str(s.team_fairshare),
                },
                {"Cluster": s.cluster},
            )
        )
    return wants


def qos_marker(slug: str) -> str:
    """The Description of every QoS tenantflow creates for ``slug``: how an undo knows the QoS is ours."""
    return f"tenantflow:{slug}"


def want_qos(c: TenantContract) -> list[Want]:
    return [
        Want("qos", c.normal_qos_name, qos_values(qos_marker(c.slug), c, c.slurm.normal_qos)),
        Want("qos", c.interactive_qos_name, qos_values(qos_marker(c.slug), c, c.slurm.interactive_qos)),
    ]


def qos_list(c: TenantContract) -> str:
    return ",".join(sorted((c.normal_qos_name, c.interactive_qos_name)))


def want_account_qos(c: TenantContract) -> Want:
    return Want(
        "account-qos", c.slug, {"QOS": qos_list(c), "DefaultQOS": c.normal_qos_name}, {"Cluster": c.slurm.cluster}
    )


def want_users(c: TenantContract) -> list[Want]:
    return [
        Want(
            "user",
            u,
            {
                "Account": c.user_account,
                "DefaultAccount": c.user_account,
                "Fairshare": "parent",
                "MaxJobs": str(c.slurm.user_max_jobs),
                "GrpTRESMins": gpu_tres(c.user_budget_gpu_minutes),
                "QOS": qos_list(c),
                "DefaultQOS": c.normal_qos_name,
            },
            {"Cluster": c.slurm.cluster, "Account": c.user_account},
        )
        for u in c.usernames
    ]


def allow_accounts(c: TenantContract) -> list[str]:
    return [c.slug, *([c.team_account] if c.team_account else [])]


def partition_line(c: TenantContract, nodes: list[str]) -> str:
    s = c.slurm
    return (
        f"PartitionName={word(c.slug)} Nodes={compress_hostlist(word(n) for n in nodes)} "
        f"AllowAccounts={words(allow_accounts(c))} Default=NO State=UP MaxTime={word(s.partition_max_time)} "
        f"DefaultTime={word(s.partition_default_time)} PreemptMode=OFF OverSubscribe={s.oversubscribe.value}"
    )
