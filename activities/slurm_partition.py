"""The tenant's Slurm partition through the Slurm operator's ConfigMap ``slurm-partitions``.

One ``<slug>.conf`` key per tenant, never ``scontrol create``: a write waits for the
operator's rendered-hash annotation, then ``scontrol reconfigure``, and
:func:`partition_problems` checks the live partition (``scontrol show partition``)
against the contract. The partition's ``AllowAccounts`` lists the tenant account
and its team sub-account, because Slurm matches job accounts exactly and users
submit under the sub-account.
"""

from __future__ import annotations

from tenantflow.activities.errors import fail
from tenantflow.activities.kubeobjects import KubeObjects, Manifest
from tenantflow.activities.polling import from_poll_interval, poll_until
from tenantflow.activities.settings import settings
from tenantflow.activities.slurm_cli import (
    RENDER_ERROR_ANNOTATION,
    RENDERED_ANNOTATION,
    SlurmCtl,
    parse_partition,
    partitions_hash,
    same_duration,
    word,
)
from tenantflow.activities.slurm_wants import allow_accounts
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.tenant import TenantContract

RENDER_TIMEOUT_S = 120.0


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


def wait_rendered(c: TenantContract, timeout_s: float = RENDER_TIMEOUT_S) -> None:
    """Poll (with backoff, heartbeating) until the operator annotated the hash of the current data."""
    cfg = settings()

    def rendered() -> bool:
        cm = _configmap(c)
        if cm is None:
            raise fail("NotFound", f"ConfigMap {cfg.slurm_namespace}/{cfg.slurm_partitions_configmap} is gone")
        annotations = (cm.get("metadata") or {}).get("annotations") or {}
        if annotations.get(RENDER_ERROR_ANNOTATION):
            raise fail(
                "Invalid",
                f"the Slurm operator refused ConfigMap {cfg.slurm_partitions_configmap}: "
                f"{annotations[RENDER_ERROR_ANNOTATION]}",
            )
        return bool(annotations.get(RENDERED_ANNOTATION) == partitions_hash(cm.get("data")))

    waited = poll_until(
        rendered,
        bool,
        every=from_poll_interval(),
        budget_s=timeout_s,
        detail=lambda _: f"waiting for the Slurm operator to render {c.slug}.conf",
    )
    if not waited.done:
        raise fail(
            "Timeout",
            f"the Slurm operator did not render ConfigMap {cfg.slurm_partitions_configmap} "
            f"within {timeout_s:.0f} s; check the operator's logs",
        )


def partition_problems(ctl: SlurmCtl, c: TenantContract, nodes: list[str]) -> list[str]:
    """How the live partition differs from the contract (empty when it matches)."""
    out = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    part = parse_partition(out.stdout) if out.exit_code == 0 else None
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
    for key, want in (("MaxTime", c.slurm.partition_max_time), ("DefaultTime", c.slurm.partition_default_time)):
        if not same_duration(want, part.get(key)):
            problems.append(f"{key}={part.get(key)}, want {want}")
    return problems


def restore_partition(ctl: SlurmCtl, c: TenantContract, previous: str | None) -> None:
    write_partition_key(c, previous)
    wait_rendered(c)
    ctl.run(["scontrol", "reconfigure"])
