"""The lab Slurm operators' labels on the slurmd pods: each tenant's pods labelled with the tenant, as the tenant's
NodeSet pod template does (``app.kubernetes.io/managed-by=<partition>``, dropped when a node leaves the partition;
the ``wrong_node_labels`` pitfall uses ``tenant=<partition>`` instead)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

from tenantflow.lab import pitfalls
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.store import Store
from tenantflow.models.hostlist import expand_hostlist

log = logging.getLogger(__name__)

NAMESPACE = "slurm-control"
SLURMD_SELECTOR = "app.kubernetes.io/component=slurmd"
TENANT_LABEL = "app.kubernetes.io/managed-by"
WRONG_TENANT_LABEL = "tenant"


def label_nodesets(store: Store, state_dir: Path | None, lines: Mapping[str, str]) -> None:
    """Label each partition's slurmd pods with their tenant (``lines``: partition line by partition name), as the
    tenant's NodeSet template does."""
    wrong = pitfalls.is_on(state_dir, pitfalls.Pitfall.wrong_node_labels)
    owner = {node: name for name, line in lines.items() for node in _line_nodes(line)}
    for pod in store.list("", "pods", NAMESPACE, label_selector=SLURMD_SELECTOR):
        tenant = owner.get((pod.get("spec") or {}).get("nodeName", ""))
        labels: dict[str, str | None] = {TENANT_LABEL: None, WRONG_TENANT_LABEL: None}
        if tenant is not None:
            labels[WRONG_TENANT_LABEL if wrong else TENANT_LABEL] = tenant
        current = pod["metadata"].get("labels") or {}
        if any(current.get(k) != v for k, v in labels.items()):
            try:
                store.patch(
                    "",
                    "pods",
                    pod["metadata"]["name"],
                    {"metadata": {"labels": labels}},
                    MERGE_PATCH,
                    namespace=NAMESPACE,
                )
            except ApiError as exc:
                log.warning("slurm operator: could not label %s: %s", pod["metadata"]["name"], exc)


def _line_nodes(line: str) -> list[str]:
    match = re.search(r"\bNodes=(\S+)", line)
    return expand_hostlist(match.group(1)) if match else []
