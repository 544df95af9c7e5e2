"""The tenant's Slurm partition through the Slurm operator's ConfigMap ``slurm-partitions``.

One ``<slug>.conf`` key per tenant, never ``scontrol create``. The operator renders
the ConfigMap into slurm.conf (SUNK's slurm-operator; nothing of ours marks when it
did), so after a write :func:`confirm_partition` runs ``scontrol reconfigure`` and
``scontrol show partition`` with backoff until slurmctld itself reports the
partition with the wanted nodes (or, after a removal, no longer knows it); then
:func:`partition_problems` compares what slurmctld reports (Nodes, MaxTime,
AllowAccounts, OverSubscribe, ...) with the contract. The partition's ``AllowAccounts`` lists the tenant account
and its team sub-account, because Slurm matches job accounts exactly and users
submit under the sub-account.
"""

from __future__ import annotations

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects, Manifest
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm.cli import Partition, SlurmCtl, parse_partition, same_duration, word
from tenantflow.activities.slurm.wants import allow_accounts
from tenantflow.models.hostlist import compress_hostlist, expand_hostlist
from tenantflow.models.tenant import TenantContract

CONFIRM_BUDGET_S = 50.0
MAX_TIME_FIX = (
    "set MaxTime=UNLIMITED (or at least the contract's wall limit) in the partition definition and "
    "tell the tenant the wall limit at handover"
)


def _configmap(c: TenantContract) -> Manifest | None:
    cfg = settings()
    return KubeObjects(c.cluster).get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace)


def read_partition_key(c: TenantContract) -> tuple[dict[str, str], str | None]:
    data = dict((_configmap(c) or {}).get("data") or {})
    return data, data.get(f"{c.slug}.conf")


def write_partition_key(c: TenantContract, line: str | None) -> None:
    """Set (or with None remove) the tenant's key in the partitions ConfigMap."""
    cfg = settings()
    key = f"{c.slug}.conf"
    objs = KubeObjects(c.cluster)
    if objs.get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace) is None:
        if line is None:
            return
        objs.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "data": {key: line},
                "metadata": {"name": cfg.slurm_partitions_configmap, "namespace": cfg.slurm_namespace},
            }
        )
        return
    objs.patch("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace, {"data": {key: line}})


def live_partition(ctl: SlurmCtl, c: TenantContract) -> Partition | None:
    """``scontrol show partition <slug>`` as slurmctld reports it; None when it does not know the partition."""
    out = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    return parse_partition(out.stdout) if out.exit_code == 0 else None


def line_nodes(line: str | None) -> list[str] | None:
    """The nodes of a ``PartitionName=`` line (None for no line: the partition should not exist)."""
    if line is None:
        return None
    value = next((t.split("=", 1)[1] for t in line.split() if t.startswith("Nodes=")), "")
    return sorted(expand_hostlist(value)) if value else []


def reports(part: Partition | None, nodes: list[str] | None) -> bool:
    """``part`` (what slurmctld reports) has exactly ``nodes``; with None, the partition is gone."""
    return part is None if nodes is None else part is not None and sorted(part.nodes) == sorted(nodes)


def confirm_partition(
    ctl: SlurmCtl, c: TenantContract, nodes: list[str] | None, budget_s: float = CONFIRM_BUDGET_S
) -> Partition | None:
    """Reconfigure and read the partition back until slurmctld reports it with ``nodes`` (None: until it is
    gone); a timeout error naming what slurmctld still reports."""
    want = None if nodes is None else sorted(nodes)

    def probe() -> Partition | None:
        ctl.run(["scontrol", "reconfigure"])
        return live_partition(ctl, c)

    waited = poll_until(
        probe,
        lambda part: reports(part, nodes),
        every=from_poll_interval(),
        budget_s=budget_s,
        detail=lambda part: f"waiting for slurmctld to report partition {c.slug}",
    )
    if not waited.done:
        seen = "no such partition" if waited.value is None else f"Nodes={waited.value.get('Nodes')}"
        target = "to be gone" if want is None else f"with Nodes={compress_hostlist(want)}"
        raise fail(
            "Timeout",
            f"slurmctld still reports {seen} for partition {c.slug} {budget_s:.0f} s after "
            f"ConfigMap {settings().slurm_partitions_configmap} changed (want it {target}); check "
            "that the Slurm operator renders the ConfigMap into slurm.conf and its logs",
        )
    return waited.value


def partition_problems(ctl: SlurmCtl, c: TenantContract, nodes: list[str]) -> list[str]:
    """How the live partition differs from the contract (empty when it matches)."""
    part = live_partition(ctl, c)
    if part is None:
        return [f"partition {c.slug} is not known to slurmctld"]
    problems = []
    if sorted(part.nodes) != sorted(nodes):
        problems.append(f"Nodes={part.get('Nodes')} but the Reservation holds {compress_hostlist(nodes)}")
    checks = {
        "AllowAccounts": ",".join(allow_accounts(c)),
        "Default": "NO",
        "State": "UP",
        "PreemptMode": "OFF",
        "OverSubscribe": c.slurm.oversubscribe.value,
    }
    problems += [
        f"{k}={part.get(k)}, want {v}"
        for k, v in checks.items()
        if sorted(part.get(k).split(",")) != sorted(v.split(","))
    ]
    if not same_duration(c.slurm.partition_default_time, part.get("DefaultTime")):
        problems.append(f"DefaultTime={part.get('DefaultTime')}, want {c.slurm.partition_default_time}")
    if not same_duration(c.slurm.partition_max_time, part.get("MaxTime")):
        problems.append(
            f"slurm.max_time: MaxTime={part.get('MaxTime')}, want {c.slurm.partition_max_time} (fix: {MAX_TIME_FIX})"
        )
    return problems


def restore_partition(ctl: SlurmCtl, c: TenantContract, previous: str | None) -> bool:
    """Put the ConfigMap key back to ``previous`` and confirm slurmctld reports it; False when both already held
    it. A key already back is not enough: an attempt that wrote it and died before ``scontrol reconfigure`` left
    slurmctld serving the tenant's partition."""
    _, current = read_partition_key(c)
    if current == previous and reports(live_partition(ctl, c), line_nodes(previous)):
        return False
    write_partition_key(c, previous)
    confirm_partition(ctl, c, line_nodes(previous))
    return True
