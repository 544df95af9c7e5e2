"""Taints against a tenant's tolerations, by the matching rules of Kubernetes' "Taints and Tolerations" page."""

from __future__ import annotations

import pytest

from tenantflow.activities.capacity.taints import Toleration, untolerated


def node(*taints: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": "gpu-01"}, "spec": {"taints": list(taints)}}


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration(key="k", value="v"), {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        (Toleration(key="k", value="v"), {"key": "k", "value": "w", "effect": "NoSchedule"}, False),
        (Toleration(key="k", value="v", effect="NoExecute"), {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        (Toleration(key="k", operator="Exists"), {"key": "k", "value": "any", "effect": "NoExecute"}, True),
        (Toleration(key="k", operator="Exists"), {"key": "other", "effect": "NoExecute"}, False),
        (Toleration(operator="Exists"), {"key": "other", "value": "x", "effect": "NoSchedule"}, True),
        (Toleration(key="k"), {"key": "k", "effect": "NoSchedule"}, True),
    ],
)
def test_a_toleration_matches_a_taint_as_kubernetes_documents(
    toleration: Toleration, taint: dict[str, str], tolerated: bool
) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_only_blocking_taints_the_tenant_does_not_tolerate_are_named() -> None:
    tainted = node(
        {"key": "reserved.tenant", "value": "tenant-foo", "effect": "NoSchedule"},
        {"key": "reserved.tenant", "value": "tenant-bar", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"},
    )
    assert untolerated(tainted, "tenant-foo") == [
        "reserved.tenant=tenant-bar:NoSchedule",
        "node.kubernetes.io/not-ready:NoSchedule",
        "nvidia.com/gpu=present:NoExecute",
    ]
    assert untolerated({"metadata": {"name": "gpu-02"}}, "tenant-foo") == []
