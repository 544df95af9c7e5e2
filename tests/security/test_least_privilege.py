"""Multi-tenant least privilege in what onboarding emits: restricted pod security, deny-all first, namespaced RBAC."""

from __future__ import annotations

from typing import Any

import pytest

from tenantflow.activities.common import manifests
from tenantflow.activities.kube import steps as kube
from tenantflow.models.runbook import APPLY
from tenantflow.models.tenant import TenantContract
from tests.runbook_manifests import OUTPOST_PORTS
from tests.workflows.contract import example_tenant

CLUSTER_WIDE_RBAC = {"ClusterRole", "ClusterRoleBinding"}
TOO_STRONG_ROLES = {"cluster-admin", "admin"}


def emitted(contract: TenantContract) -> list[dict[str, Any]]:
    """Every Kubernetes object the kube layer and the login release write, in write order."""
    objects = [obj for step in kube.step_manifests(contract, OUTPOST_PORTS).values() for obj in step]
    objects.append(manifests.authorized_keys_secret(contract))
    return objects


@pytest.fixture(params=["tenant-foo", "tenant-bar"])
def contract(request: pytest.FixtureRequest) -> TenantContract:
    return example_tenant(request.param)


def test_namespace_enforces_baseline_and_reports_restricted(contract: TenantContract) -> None:
    """Baseline is enforced (the login pod's root sshd needs it: issue 23's pod-security decision, shown in the
    login plan); restricted is still warned about and audited."""
    labels = manifests.namespace(contract)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    for mode in ("audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"


def test_deny_all_network_policy_comes_first_and_denies_everything(contract: TenantContract) -> None:
    policies = [o for o in emitted(contract) if o["kind"] == "NetworkPolicy"]
    deny, *allows = policies
    assert deny["metadata"]["name"].endswith("-deny-all")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    for allow in allows:
        for rule in allow["spec"].get("ingress", []) + allow["spec"].get("egress", []):
            peers = rule.get("from", []) + rule.get("to", [])
            assert peers, f"an allow rule without peers opens everything: {rule}"
            if any("ipBlock" in p for p in peers):
                assert allow["spec"]["podSelector"] == {"matchLabels": manifests.login_selector(contract)}, allow
                assert rule in allow["spec"].get("ingress", []) and rule["ports"] == [{"port": 22, "protocol": "TCP"}]
        ports = {(p["port"], p["protocol"]) for r in allow["spec"].get("egress", []) for p in r.get("ports", [])}
        # the estate's pod ports (OUTPOST_PORTS): the outpost's LDAPS 6636 behind Service port 636, slurmd's 6818
        assert ports <= {
            (53, "UDP"),
            (53, "TCP"),
            (636, "TCP"),
            (443, "TCP"),
            (6636, "TCP"),
            (6817, "TCP"),
            (6818, "TCP"),
        }
    order = [s.name for s in APPLY]
    assert order.index("kube.network_policy") < order.index("login.release"), "pods start before the deny-all"
    assert order.index("kube.namespace") < order.index("kube.network_policy")


def test_rbac_is_namespace_scoped_and_bounded(contract: TenantContract) -> None:
    objects = emitted(contract)
    assert not [o for o in objects if o["kind"] in CLUSTER_WIDE_RBAC]
    bindings = [o for o in objects if o["kind"] == "RoleBinding"]
    assert bindings, "the admins group is bound"
    for binding in bindings:
        assert binding["metadata"]["namespace"] == contract.namespace
        assert binding["roleRef"]["name"] not in TOO_STRONG_ROLES
        assert binding["subjects"] == [
            {"kind": "Group", "name": f"{contract.slug}-admins", "apiGroup": "rbac.authorization.k8s.io"}
        ]


def test_every_namespaced_object_stays_in_the_tenant_namespace(contract: TenantContract) -> None:
    other = "tenant-bar" if contract.slug == "tenant-foo" else "tenant-foo"
    for obj in emitted(contract):
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == contract.namespace, obj["metadata"]
        assert obj["metadata"]["labels"][manifests.TENANT_LABEL] == contract.slug
        assert other not in str(obj), f"{obj['kind']} of {contract.slug} names {other}"
