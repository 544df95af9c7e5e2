"""The lab drops its own probes as a CNI would: NetworkPolicies of the login pod's namespace and of the target's."""

from __future__ import annotations

from typing import Any

import pytest

from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
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


def test_the_runbooks_policies_drop_slurmctld_and_ldaps_on_the_outposts_pod_port(store: Store) -> None:
    """The outpost Service maps 636 to pod port 6636, and a policy port is a pod port: the runbook's 636 opens
    nothing the outpost listens on."""
    for obj in runbook_policies():
        store.create(obj)
    blocked = probe_blocked(store, NS, POD, SLURMCTLD)
    assert blocked is not None and "slurmctld.slurm-control:6817/TCP (egress)" in blocked
    ldaps = probe_blocked(store, NS, POD, LDAP_OUTPOST)
    assert ldaps == (
        f"NetworkPolicy drops {NS}/{POD} -> authentik-ldap-outpost.auth:636/TCP (egress, pod port 6636)"
    ), ldaps


def _ldaps_target_port(store: Store, target: str) -> None:
    ports = store.get("", "services", "authentik-ldap-outpost", "auth")["spec"]["ports"]
    ports = [{**p, "targetPort": target} if p["port"] == 636 else p for p in ports]
    store.patch("", "services", "authentik-ldap-outpost", {"spec": {"ports": ports}}, MERGE_PATCH, namespace="auth")


def test_a_named_target_port_is_resolved_in_the_selected_pods(store: Store) -> None:
    _ldaps_target_port(store, "ldaps")
    dns = {"port": 53, "protocol": "UDP"}
    store.create(policy("to-636", NS, {"podSelector": {}, "egress": [{"ports": [dns, {"port": 636}]}]}))
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) == (
        f"NetworkPolicy drops {NS}/{POD} -> authentik-ldap-outpost.auth:636/TCP (egress, pod port 6636)"
    )
    store.create(policy("to-6636", NS, {"podSelector": {}, "egress": [{"ports": [{"port": 6636}]}]}))
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is None
    _ldaps_target_port(store, "secure-ldap")
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) == (
        "no pod answers authentik-ldap-outpost.auth:636/TCP (the Service's targetPort leads to no container port)"
    )


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
    assert blocked is not None and "(ingress, pod port 6636)" in blocked
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
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is not None, "636 is the Service's port, not the pod's"
    store.create(
        policy(
            "tenants-ldaps",
            "auth",
            {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}], "ports": [{"port": 6636}]}]},
        )
    )
    assert probe_blocked(store, NS, POD, LDAP_OUTPOST) is None


def test_a_policy_selecting_other_pods_leaves_the_login_pod_open(store: Store) -> None:
    store.create(policy("workers", NS, {"podSelector": {"matchLabels": {"app": "worker"}}, "policyTypes": ["Egress"]}))
    assert probe_blocked(store, NS, POD, SLURMCTLD) is None
