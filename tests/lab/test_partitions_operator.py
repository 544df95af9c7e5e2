"""The lab's Slurm-operator stand-in renders the partitions ConfigMap and annotates the digest the product's
Slurm layer waits for; it refuses what is not one ``PartitionName=`` line per ``<name>.conf`` key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenantflow.activities.slurm_cli import partitions_hash
from tenantflow.lab.controllers.slurm import (
    CONFIGMAP,
    NAMESPACE,
    RENDER_ERROR_ANNOTATION,
    RENDERED_ANNOTATION,
    PartitionsOperator,
)
from tenantflow.lab.kubeapi.patching import MERGE_PATCH
from tenantflow.lab.kubeapi.store import Store

LINE = "PartitionName=tenant-foo Nodes=gpu-[001-004] AllowAccounts=tenant-foo State=UP"


def set_data(store: Store, data: dict[str, Any]) -> dict[str, Any]:
    store.patch("", "configmaps", CONFIGMAP, {"data": data}, MERGE_PATCH, namespace=NAMESPACE)
    return dict(store.get("", "configmaps", CONFIGMAP, NAMESPACE)["metadata"].get("annotations") or {})


def test_the_operator_renders_and_annotates_the_digest_the_product_checks(tmp_path: Path) -> None:
    store, rendered = Store(), tmp_path / "partitions.conf"
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    operator = PartitionsOperator(store, rendered)
    operator.ensure_configmap()
    store.subscribe(operator.on_event, replay=True)

    annotations = set_data(store, {"tenant-foo.conf": f"{LINE}\n"})
    assert rendered.read_text() == f"# rendered from ConfigMap slurm-partitions; do not edit\n{LINE}\n"
    assert annotations[RENDERED_ANNOTATION] == partitions_hash({"tenant-foo.conf": f"{LINE}\n"})
    assert RENDER_ERROR_ANNOTATION not in annotations

    annotations = set_data(store, {"tenant-bar.conf": "Include /etc/passwd"})
    assert "tenant-bar.conf" in annotations[RENDER_ERROR_ANNOTATION]
    assert LINE in rendered.read_text() and "passwd" not in rendered.read_text()
