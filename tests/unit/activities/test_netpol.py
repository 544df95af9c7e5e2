"""activities/kube/netpol.py: Kubernetes' NetworkPolicy semantics for the login pod's required paths (pure)."""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common import manifests
from tenantflow.activities.kube import netpol
from tenantflow.models.network_policy import REQUIRED_PATHS, NetworkPolicy
from tests.unit.tenants import tenant

LOGIN = netpol.Endpoint("tenant-foo", {"app": "login", "app.kubernetes.io/instance": "login-tenant-foo"})
CLUSTER = netpol.Cluster({})


def pol(spec: dict[str, Any], namespace: str = "tenant-foo") -> NetworkPolicy:
    return NetworkPolicy.model_validate({"metadata": {"name": "p", "namespace": namespace}, "spec": spec})


def blocked(*policies: NetworkPolicy) -> list[str]:
    return [p.label for p in netpol.unreachable(policies, LOGIN, CLUSTER)]


def test_no_policy_isolates_nothing() -> None:
    assert blocked() == []


def test_deny_all_blocks_every_path_and_only_ingress_without_egress_rules() -> None:
    assert len(blocked(pol({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}))) == len(REQUIRED_PATHS)
    assert blocked(pol({"podSelector": {}})) == ["login pod from SSH clients 22/TCP"]


def test_egress_rules_without_policy_types_isolate_egress_too() -> None:
    only_dns = pol({"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}], "ingress": [{}]})
    assert blocked(only_dns) == [
        "login pod to slurmctld 6817/TCP",
        "login pod to the LDAP outpost 636/TCP",
        "login pod to DNS 53/TCP",
    ]


def test_a_port_range_and_protocols() -> None:
    spec = {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [{"ports": [{"port": 600, "endPort": 7000, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}],
    }
    assert blocked(pol(spec)) == ["login pod to DNS 53/TCP"]


def test_a_pod_selector_peer_means_the_policys_own_namespace() -> None:
    spec = {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "slurmctld"}}}]}],
    }
    assert "login pod to slurmctld 6817/TCP" in blocked(pol(spec))
    both = {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "slurm-control"}},
                        "podSelector": {"matchLabels": {"app": "slurmctld"}},
                    }
                ]
            }
        ],
    }
    assert "login pod to slurmctld 6817/TCP" not in blocked(pol(both))


def test_ssh_needs_an_ip_block_or_any_source_and_a_policy_of_other_pods_does_not_count() -> None:
    deny = pol({"podSelector": {}, "policyTypes": ["Ingress"]})
    others = pol({"podSelector": {"matchLabels": {"app": "worker"}}, "ingress": [{}]})
    assert blocked(deny, others) == ["login pod from SSH clients 22/TCP"]
    ssh = pol(
        {
            "podSelector": {"matchLabels": {"app": "login"}},
            "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 22}]}],
        }
    )
    assert blocked(deny, ssh) == []


def test_the_generated_policies_open_every_path_and_the_runbooks_do_not() -> None:
    contract = tenant()
    generated = [NetworkPolicy.model_validate(m) for m in manifests.network_policies(contract)]
    assert blocked(*generated) == []
    runbook = [
        NetworkPolicy.model_validate(manifests.deny_all_policy(contract)),
        NetworkPolicy.model_validate(
            manifests.allow_policy(contract)
            | {
                "spec": {
                    **manifests.allow_policy(contract)["spec"],
                    "egress": manifests.allow_policy(contract)["spec"]["egress"][:1],
                }
            }
        ),
    ]
    assert blocked(*runbook) == [
        "login pod to slurmctld 6817/TCP",
        "login pod to DNS 53/TCP",
        "login pod from SSH clients 22/TCP",
    ]
