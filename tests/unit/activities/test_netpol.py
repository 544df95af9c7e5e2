"""activities/kube/netpol.py: Kubernetes' NetworkPolicy semantics for the login pod's required paths (pure)."""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common import manifests
from tenantflow.activities.kube import netpol, ports
from tenantflow.models.network_policy import REQUIRED_PATHS, NetworkPolicy
from tests.runbook_manifests import OUTPOST_PORTS
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


def test_the_generated_policies_open_every_pod_port_path_and_the_runbooks_do_not() -> None:
    """On an estate whose outpost Service maps 636 to pod port 6636, with SlurmdPort 6818 and SrunPortRange
    60001-63000, the generated policies open every path on its pod port; the runbook's literal rule drops LDAPS
    (636 is the Service's port), slurmctld, slurmd and DNS over TCP."""
    contract = tenant()
    paths = ports.required_paths(OUTPOST_PORTS)
    assert [p.label for p in paths if p.peer in {"the LDAP outpost", "slurmd"}] == [
        "login pod to the LDAP outpost 6636/TCP",
        "login pod to slurmd 6818/TCP",
        "login pod from slurmd 60001-63000/TCP",
    ]
    generated = [NetworkPolicy.model_validate(m) for m in manifests.network_policies(contract, OUTPOST_PORTS)]
    assert [p.label for p in netpol.unreachable(generated, LOGIN, CLUSTER, paths=paths)] == []
    allow = manifests.allow_policy(contract, OUTPOST_PORTS)
    literal = allow | {"spec": {**allow["spec"], "egress": allow["spec"]["egress"][:1]}}
    runbook = [NetworkPolicy.model_validate(manifests.deny_all_policy(contract)), NetworkPolicy.model_validate(literal)]
    assert [p.label for p in netpol.unreachable(runbook, LOGIN, CLUSTER, paths=paths)] == [
        "login pod to slurmctld 6817/TCP",
        "login pod to the LDAP outpost 6636/TCP",
        "login pod to DNS 53/TCP",
        "login pod from SSH clients 22/TCP",
        "login pod to slurmd 6818/TCP",
    ]


def test_a_policy_opening_part_of_the_srun_range_blocks_the_range() -> None:
    [callback] = [p for p in ports.required_paths(OUTPOST_PORTS) if p.direction == "ingress" and p.end_port]
    slurm = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "slurm-control"}}}
    part = pol({"podSelector": {}, "ingress": [{"from": [slurm], "ports": [{"port": 60001, "endPort": 62999}]}]})
    whole = pol({"podSelector": {}, "ingress": [{"from": [slurm], "ports": [{"port": 60001, "endPort": 63000}]}]})
    cluster = netpol.Cluster({"slurm-control": {}})
    assert netpol.unreachable([part], LOGIN, cluster, paths=[callback]) == [callback]
    assert netpol.unreachable([whole], LOGIN, cluster, paths=[callback]) == []


def test_the_srun_range_may_be_opened_by_several_rules_and_policies_but_not_with_a_gap() -> None:
    [callback] = [p for p in ports.required_paths(OUTPOST_PORTS) if p.direction == "ingress" and p.end_port]
    slurm = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "slurm-control"}}}
    cluster = netpol.Cluster({"slurm-control": {}})

    def opening(*ranges: tuple[int, int]) -> NetworkPolicy:
        rules = [{"from": [slurm], "ports": [{"port": low, "endPort": high}]} for low, high in ranges]
        return pol({"podSelector": {}, "ingress": rules})

    halves = [opening((60001, 61500)), opening((61501, 63000))]
    overlapping = [opening((61000, 63000), (60001, 61200))]
    gap = [opening((60001, 61499), (61501, 63000))]
    other_protocol = [pol({"podSelector": {}, "ingress": [{"from": [slurm], "ports": [{"protocol": "UDP"}]}]})]
    any_tcp_port = [pol({"podSelector": {}, "ingress": [{"from": [slurm], "ports": [{"protocol": "TCP"}]}]})]
    assert netpol.unreachable(halves, LOGIN, cluster, paths=[callback]) == []
    assert netpol.unreachable(overlapping, LOGIN, cluster, paths=[callback]) == []
    assert netpol.unreachable(gap, LOGIN, cluster, paths=[callback]) == [callback]
    assert netpol.unreachable(other_protocol, LOGIN, cluster, paths=[callback]) == [callback]
    assert netpol.unreachable(any_tcp_port, LOGIN, cluster, paths=[callback]) == []


def test_covers_needs_every_port_of_the_range() -> None:
    assert netpol.covers([(10, 20)], 10, 20)
    assert netpol.covers([(15, 20), (10, 14)], 10, 20)
    assert not netpol.covers([(10, 14), (16, 20)], 10, 20)
    assert not netpol.covers([(11, 20)], 10, 20)
    assert not netpol.covers([(10, 19)], 10, 20)
    assert netpol.covers([(0, 65535)], 22, 22)
    assert not netpol.covers([], 22, 22)
