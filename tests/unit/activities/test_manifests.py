"""activities/common/manifests.py: the Kubernetes objects rendered for a contract (labels, quotas, policies).

The built-in kinds are also checked against Kubernetes 1.32's strict schemas (``kubernetes-validate``), so a
misspelt field fails here rather than at the apiserver.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from tenantflow.activities.common import manifests
from tenantflow.activities.common.kubeobjects import RUNBOOK_RESERVATION_API
from tenantflow.models.network_policy import NetworkPorts
from tenantflow.models.tenant import TenantContract
from tests.runbook_manifests import OUTPOST_PORTS
from tests.unit.tenants import tenant

Render = Callable[[TenantContract], manifests.Manifest]
BUILTIN_KINDS: list[Render] = [
    manifests.namespace,
    manifests.resource_quota,
    manifests.limit_range,
    manifests.deny_all_policy,
    lambda c: manifests.allow_policy(c, OUTPOST_PORTS),
    manifests.admins_role_binding,
    manifests.authorized_keys_secret,
]
EVERY_KIND = [
    *BUILTIN_KINDS,
    lambda c: manifests.reservation_binding(c, RUNBOOK_RESERVATION_API),
    lambda c: manifests.reservation(c, ["gpu-02", "gpu-01"], RUNBOOK_RESERVATION_API),
]


@pytest.mark.parametrize("render", BUILTIN_KINDS)
def test_builtin_kinds_pass_the_strict_kubernetes_schema(render: Render) -> None:
    try:
        kubernetes_validate.validate(render(tenant()), "1.32", strict=True)
    except kubernetes_validate.ValidationError as error:
        pytest.fail(f"{render.__name__}: {error.message} at {list(error.absolute_path)}")


@pytest.mark.parametrize("render", EVERY_KIND)
def test_every_object_carries_the_owner_labels(render: Render) -> None:
    labels = render(tenant())["metadata"]["labels"]
    assert labels[manifests.MANAGED_BY] == "tenantflow"
    assert labels[manifests.TENANT_LABEL] == "tenant-foo"


def test_namespace_enforces_baseline_and_warns_and_audits_restricted() -> None:
    """The login pod's root sshd needs baseline; restricted stays on as warn and audit (issue 23)."""
    labels = manifests.namespace(tenant())["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("pod-security.kubernetes.io/")} == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    assert labels["tenant"] == "tenant-foo"
    forced = manifests.namespace(tenant(), "restricted")["metadata"]["labels"]
    assert forced["pod-security.kubernetes.io/enforce"] == "restricted"


def test_resource_quota_takes_gpus_from_capacity_and_the_rest_from_the_contract() -> None:
    contract = tenant(capacity__gpus=16, kube_quota__requests_memory="2Ti", kube_quota__persistentvolumeclaims=7)
    quota = manifests.resource_quota(contract)
    assert quota["metadata"]["namespace"] == "tenant-foo"
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "16",
        "requests.cpu": "1024",
        "requests.memory": "2Ti",
        "limits.memory": "10Ti",
        "persistentvolumeclaims": "7",
        "requests.storage": "100Ti",
    }


def test_limit_range_sets_container_defaults() -> None:
    (limit,) = manifests.limit_range(tenant())["spec"]["limits"]
    assert limit == {
        "type": "Container",
        "default": {"cpu": "4", "memory": "16Gi"},
        "defaultRequest": {"cpu": "1", "memory": "4Gi"},
    }


def test_deny_all_selects_every_pod_in_both_directions_with_no_rules() -> None:
    spec = manifests.deny_all_policy(tenant())["spec"]
    assert spec == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def peer_namespaces(peers: list[dict[str, Any]]) -> set[str]:
    names = set()
    for peer in peers:
        assert set(peer) == {"namespaceSelector"}, f"peer must select namespaces only: {peer}"
        names.add(peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"])
    return names


def test_allow_policy_keeps_the_runbooks_rule_and_opens_each_path_on_its_pod_port() -> None:
    policy = manifests.allow_policy(tenant(), OUTPOST_PORTS)
    spec = policy["spec"]
    assert policy["metadata"]["name"] == "tenant-foo-allow"
    assert spec["podSelector"] == {} and spec["policyTypes"] == ["Ingress", "Egress"]
    ingress, srun = spec["ingress"]
    assert {"tenant-foo", "slurm-control"} <= peer_namespaces(ingress["from"])
    assert (peer_namespaces(srun["from"]), srun["ports"]) == (
        {"slurm-control"},
        [{"port": 60001, "endPort": 63000, "protocol": "TCP"}],
    )
    runbook, tenant_pods, outpost, slurm, dns = spec["egress"]
    assert {"tenant-foo", "slurm-control", "auth", "kube-system"} <= peer_namespaces(runbook["to"])
    assert {(p["port"], p["protocol"]) for p in runbook["ports"]} == {(53, "UDP"), (636, "TCP"), (443, "TCP")}
    assert (peer_namespaces(tenant_pods["to"]), "ports" in tenant_pods) == ({"tenant-foo"}, False)
    assert (peer_namespaces(outpost["to"]), outpost["ports"]) == ({"auth"}, [{"port": 6636, "protocol": "TCP"}])
    assert (peer_namespaces(slurm["to"]), slurm["ports"]) == (
        {"slurm-control"},
        [{"port": 6817, "protocol": "TCP"}, {"port": 6818, "protocol": "TCP"}],
    )
    assert (peer_namespaces(dns["to"]), dns["ports"]) == (
        {"kube-system"},
        [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
    )
    assert any("maps 636 to pod port 6636" in why for why in manifests.policy_additions(OUTPOST_PORTS))


def test_without_srun_port_range_no_range_rule_is_written() -> None:
    ports = NetworkPorts(ldaps=636, slurmctld=6817, dns_udp=53, dns_tcp=53, slurmd=6818)
    assert len(manifests.allow_policy(tenant(), ports)["spec"]["ingress"]) == 1
    assert not any("SrunPortRange" in why for why in manifests.policy_additions(ports))


def test_reservation_binding_selects_the_tenants_workloads() -> None:
    spec = manifests.reservation_binding(tenant(), RUNBOOK_RESERVATION_API)["spec"]
    assert spec["reservationName"] == "tenant-foo-reservation"
    assert spec["podSelector"] == {"matchLabels": {manifests.WORKLOAD_LABEL: "tenant-foo"}}


def test_reservation_lists_nodes_sorted_and_never_evicts_by_default() -> None:
    spec = manifests.reservation(tenant(), ["gpu-03", "gpu-01", "gpu-02"], RUNBOOK_RESERVATION_API)["spec"]
    assert spec["reservedNodes"] == ["gpu-01", "gpu-02", "gpu-03"]
    assert spec["evictOnRelease"] is False
    assert spec["nodeSelector"] == {"matchLabels": {"hardware-pool": "gpu-h100-rack-a"}}


def test_admins_get_edit_in_the_namespace_only() -> None:
    binding = manifests.admins_role_binding(tenant())
    assert binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == "tenant-foo"
    assert binding["subjects"] == [
        {"kind": "Group", "name": "tenant-foo-admins", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    assert binding["roleRef"]["kind"] == "ClusterRole" and binding["roleRef"]["name"] == "edit"


def test_authorized_keys_hold_each_users_public_keys_one_per_line() -> None:
    contract = tenant()
    data = manifests.authorized_keys_secret(contract)["data"]
    assert set(data) == {"alice", "bob", "carol"}
    alice = base64.b64decode(data["alice"]).decode()
    assert alice == contract.users[0].ssh_keys[0] + "\n"
    assert "PRIVATE" not in alice


def test_login_release_points_at_secrets_by_name_and_mounts_the_tenants_storage() -> None:
    release = manifests.login_release(
        tenant(),
        ldap_uri="ldaps://ldap.auth:636",
        ldap_base_dn="dc=example",
        ldap_bind_dn="cn=bind",
        bind_password_secret="ldap-bind",
        slurm_controller_host="slurmctld.slurm-control",
        chart_source=("flux-system", "sunk"),
    )
    values = release["spec"]["values"]
    assert values["ldap"]["bindPasswordSecret"] == "ldap-bind"
    assert values["sshKeysSecret"] == "tenant-foo-authorized-keys"
    assert values["homeMount"]["filesystem"] == "tenant-foo-home"
    assert values["scratchMount"]["filesystem"] == "tenant-foo-scratch"
    shared = manifests.login_release(
        tenant(storage__isolation="shared-org"),
        ldap_uri="",
        ldap_base_dn="",
        ldap_bind_dn="",
        bind_password_secret="",
        slurm_controller_host="",
        chart_source=("flux-system", "sunk"),
    )
    assert shared["spec"]["values"]["homeMount"]["filesystem"] == "home/tenant-foo"


def test_login_release_is_a_flux_helmrelease_v2_of_the_configured_source() -> None:
    release = manifests.login_release(
        tenant(),
        ldap_uri="",
        ldap_base_dn="",
        ldap_bind_dn="",
        bind_password_secret="ldap-bind",
        slurm_controller_host="",
        chart_source=("flux-system", "sunk"),
    )
    assert release["apiVersion"] == "helm.toolkit.fluxcd.io/v2"
    assert release["spec"]["interval"] == "10m"
    assert release["spec"]["chart"] == {
        "spec": {
            "chart": "sunk-login",
            "version": "1.4.x",
            "sourceRef": {"kind": "HelmRepository", "name": "sunk", "namespace": "flux-system"},
        }
    }
    context = release["spec"]["values"]["securityContext"]
    assert context["privileged"] is False and context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert set(context["capabilities"]["add"]) >= {"SETUID", "SETGID", "SYS_CHROOT"}


def test_login_pods_are_selected_by_the_release_label() -> None:
    assert manifests.login_pod_selector(tenant()) == "app.kubernetes.io/instance=login-tenant-foo"
