"""The lab's Slurm-operator stand-in renders the partitions ConfigMap and annotates the digest it rendered (its own
bookkeeping, which the product never reads); it refuses what is not one ``PartitionName=`` line per ``<name>.conf``
key, labels the NodeSet pods of each partition's nodes, and obeys the ``short_max_time`` pitfall."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenantflow.lab import pitfalls
from tenantflow.lab.controllers.slurm import (
    CONFIGMAP,
    NAMESPACE,
    RENDER_ERROR_ANNOTATION,
    RENDERED_ANNOTATION,
    PartitionsOperator,
    rendered_hash,
)
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.pitfalls import Pitfall
from tenantflow.lab.seed import slurmd_pod
from tenantflow.models.content_types import MERGE_PATCH

LINE = "PartitionName=tenant-foo Nodes=gpu-[001-004] AllowAccounts=tenant-foo State=UP"


def set_data(store: Store, data: dict[str, Any]) -> dict[str, Any]:
    store.patch("", "configmaps", CONFIGMAP, {"data": data}, MERGE_PATCH, namespace=NAMESPACE)
    return dict(store.get("", "configmaps", CONFIGMAP, NAMESPACE)["metadata"].get("annotations") or {})


def test_the_operator_renders_and_annotates_the_digest_it_rendered(tmp_path: Path) -> None:
    store, rendered = Store(), tmp_path / "partitions.conf"
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    operator = PartitionsOperator(store, rendered)
    operator.ensure_configmap()
    store.subscribe(operator.on_event, replay=True)

    annotations = set_data(store, {"tenant-foo.conf": f"{LINE}\n"})
    assert rendered.read_text() == f"# rendered from ConfigMap slurm-partitions; do not edit\n{LINE}\n"
    assert annotations[RENDERED_ANNOTATION] == rendered_hash({"tenant-foo.conf": f"{LINE}\n"})
    assert RENDER_ERROR_ANNOTATION not in annotations

    annotations = set_data(store, {"tenant-bar.conf": "Include /etc/passwd"})
    assert "tenant-bar.conf" in annotations[RENDER_ERROR_ANNOTATION]
    assert LINE in rendered.read_text() and "passwd" not in rendered.read_text()


def _operator(tmp_path: Path) -> tuple[Store, Path]:
    store, rendered = Store(), tmp_path / "partitions.conf"
    store.seed(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            slurmd_pod("gpu-001"),
            slurmd_pod("gpu-009"),
        ]
    )
    operator = PartitionsOperator(store, rendered, tmp_path)
    operator.ensure_configmap()
    store.subscribe(operator.on_event, replay=True)
    return store, rendered


def _labels(store: Store, pod: str) -> dict[str, str]:
    return dict(store.get("", "pods", pod, NAMESPACE)["metadata"].get("labels") or {})


def test_the_nodeset_pods_of_a_partition_carry_its_tenant(tmp_path: Path) -> None:
    store, _ = _operator(tmp_path)
    set_data(store, {"tenant-foo.conf": LINE})
    assert _labels(store, "slurmd-gpu-001")["app.kubernetes.io/managed-by"] == "tenant-foo"
    assert "app.kubernetes.io/managed-by" not in _labels(store, "slurmd-gpu-009")
    set_data(store, {"tenant-foo.conf": None})
    assert "app.kubernetes.io/managed-by" not in _labels(store, "slurmd-gpu-001")


def test_pitfalls_wrong_labels_and_short_max_time(tmp_path: Path) -> None:
    store, rendered = _operator(tmp_path)
    pitfalls.switch(tmp_path, Pitfall.wrong_node_labels, True)
    pitfalls.switch(tmp_path, Pitfall.short_max_time, True)
    set_data(store, {"tenant-foo.conf": f"{LINE} MaxTime=UNLIMITED"})
    labels = _labels(store, "slurmd-gpu-001")
    assert labels["tenant"] == "tenant-foo" and "app.kubernetes.io/managed-by" not in labels
    assert "MaxTime=12:00:00" in rendered.read_text() and "UNLIMITED" not in rendered.read_text()
