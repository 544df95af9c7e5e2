"""The lab drops its own probes as a CNI would: NetworkPolicies of the login pod's namespace and of the target's."""

from __future__ import annotations

from typing import Any

import pytest

from tenantflow.lab.kubeapi.netpolicy import LDAP_OUTPOST, SLURMCTLD, probe_blocked
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import seed_tenant_cluster
from tests.runbook_manifests import runbook_policies

NS = "tenant-foo"
POD = "login-tenant-foo-0"


@pytest.fixture
def store() -> Store:
    store = Store()
    seed_tenant_cluster(store, node_count=1)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": POD,
                "namespace": NS,
                "labels": {"app": "login", "app.kubernetes.io/instance": "login-tenant-foo"},
            },
            "spec": {"containers": [{"name": "sshd", "image": "sunk-login"}]},
        }
    )
    return store


def policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_without_policies_every_probe_passes(store: Store) -> None:
    assert probe_blocked(store, NS, POD, SLURMCTLD) is None
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is None


def test_the_runbooks_policies_drop_slurmctld_but_not_ldap(store: Store) -> None:
    for obj in runbook_policies():
        store.create(obj)
    blocked = probe_blocked(store, NS, POD, SLURMCTLD)
    assert blocked is not None and "slurmctld.slurm-control:6817/TCP (egress)" in blocked
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is None


def test_deny_all_egress_drops_dns_first(store: Store) -> None:
    store.create(policy("deny", NS, {"podSelector": {}, "policyTypes": ["Egress"]}))
    blocked = probe_blocked(store, NS, POD, LDAP_OUTPOST)
    assert blocked is not None and "kube-dns.kube-system:53/UDP (egress)" in blocked


def test_the_targets_ingress_policy_counts_too(store: Store) -> None:
    store.create(
        policy(
            "only-controllers",
            "auth",
            {
                "podSelector": {"matchLabels": {"app": "authentik-ldap-outpost"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "login"}}}]}],
            },
        )
    )
    blocked = probe_blocked(store, NS, POD, LDAP_OUTPOST)
    assert blocked is not None and "(ingress)" in blocked
    store.create(
        policy(
            "tenants",
            "auth",
            {
                "podSelector": {},
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {},
                                "podSelector": {
                                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["login"]}]
                                },
                            }
                        ],
                        "ports": [{"port": 636}],
                    }
                ],
            },
        )
    )
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is None


def test_a_policy_selecting_other_pods_leaves_the_login_pod_open(store: Store) -> None:
    store.create(policy("workers", NS, {"podSelector": {"matchLabels": {"app": "worker"}}, "policyTypes": ["Egress"]}))
    assert probe_blocked(store, NS, POD, SLURMCTLD) is None
