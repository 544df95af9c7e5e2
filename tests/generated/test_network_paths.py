"""The tenant's NetworkPolicies let through every path its login pod needs, judged by the lab's own evaluator.

The lab's CNI stand-in (:mod:`lab.kubeapi.netpolicy`, written from Kubernetes' NetworkPolicy documentation
independently of the product) decides whether the login pod reaches slurmctld 6817/TCP, the LDAP outpost
636/TCP and DNS on 53/UDP and 53/TCP, over the objects in an in-memory lab store. For the generated policies
every path must be open, and SSH 22/TCP must be admitted from any address. For a contract's own policies
(``network.policies``, drawn at random) the product's evaluator (:mod:`activities.kube.netpol`, which refuses a
contract that cuts a path at plan time) must agree with the lab's on every path.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tenantflow.activities.common import manifests
from tenantflow.activities.kube import netpol
from tenantflow.activities.kube.ports import required_paths
from tenantflow.lab.kubeapi.netpolicy import DNS, LDAP_OUTPOST, SLURMCTLD, Target, probe_blocked
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import platform_objects
from tenantflow.models.network_policy import REQUIRED_PATHS, NetworkPolicy
from tenantflow.models.tenant import TenantContract
from tests.generated.profile import GENERATED
from tests.generated.strategies import Drawn, contract_of, contracts
from tests.runbook_manifests import OUTPOST_PORTS

DNS_TCP = Target("kube-system", "kube-dns", 53, "TCP", (("k8s-app", "kube-dns"),))
EGRESS = {(6817, "TCP"): SLURMCTLD, (636, "TCP"): LDAP_OUTPOST, (53, "UDP"): DNS, (53, "TCP"): DNS_TCP}
LOGIN_POD = "login-0"


def login_labels(slug: str) -> dict[str, str]:
    """The labels the login chart puts on its pods: the workload label and the release instance."""
    return {"app.kubernetes.io/managed-by": slug, "app": "login", "app.kubernetes.io/instance": f"login-{slug}"}


def lab_cluster(contract: TenantContract, policies: list[dict[str, Any]]) -> Store:
    store = Store()
    store.seed(platform_objects(""))
    store.create(manifests.namespace(contract))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": LOGIN_POD, "namespace": contract.namespace, "labels": login_labels(contract.slug)},
        "spec": {"containers": [{"name": "sshd", "image": "sunk-login"}]},
    }
    store.create(pod)
    for policy in policies:
        store.create(policy)
    return store


def lab_blocked(store: Store, contract: TenantContract) -> set[tuple[int, str]]:
    return {port for port, target in EGRESS.items() if probe_blocked(store, contract.namespace, LOGIN_POD, target)}


def admits_ssh_from_anywhere(policies: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    """Some policy selecting the login pod admits 22/TCP from 0.0.0.0/0 and ::/0 (the LoadBalancer's clients)."""
    for policy in policies:
        spec = policy["spec"]
        selected = all(labels.get(k) == v for k, v in spec["podSelector"].get("matchLabels", {}).items())
        for rule in spec.get("ingress", []) if selected else []:
            cidrs = {peer.get("ipBlock", {}).get("cidr") for peer in rule.get("from", [])}
            if {"0.0.0.0/0", "::/0"} <= cidrs and {"port": 22, "protocol": "TCP"} in rule.get("ports", []):
                return True
    return False


@GENERATED
@given(contracts())
def test_the_generated_policies_open_every_path_the_login_pod_needs(drawn: Drawn) -> None:
    contract = contract_of(drawn)
    policies = manifests.network_policies(contract, OUTPOST_PORTS)
    assert not lab_blocked(lab_cluster(contract, policies), contract)
    assert admits_ssh_from_anywhere(policies, login_labels(contract.slug))


LABEL_KEYS = ("app", "k8s-app", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "tier")
NAMESPACES = ("slurm-control", "auth", "kube-system", "default")


@st.composite
def selectors(draw: st.DrawFn, values: list[str]) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if draw(st.booleans()):
        selector["matchLabels"] = draw(
            st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(values), max_size=2)
        )
    if draw(st.integers(0, 3)) == 0:
        operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        listed = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2)) if operator in ("In", "NotIn") else []
        selector["matchExpressions"] = [
            {"key": draw(st.sampled_from(LABEL_KEYS)), "operator": operator, "values": listed}
        ]
    return selector


@st.composite
def peers(draw: st.DrawFn, slug: str, values: list[str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["namespace", "pod", "both", "ipBlock"]))
    if kind == "ipBlock":
        return {"ipBlock": {"cidr": draw(st.sampled_from(["0.0.0.0/0", "10.0.0.0/8"]))}}
    peer: dict[str, Any] = {}
    if kind in ("namespace", "both"):
        names = st.sampled_from([slug, *NAMESPACES])
        namespace = {"matchLabels": {"kubernetes.io/metadata.name": draw(names)}}
        peer["namespaceSelector"] = draw(st.one_of(st.just(namespace), st.just({}), selectors([slug, *NAMESPACES])))
    if kind in ("pod", "both"):
        peer["podSelector"] = draw(selectors(values))
    return peer


@st.composite
def ports(draw: st.DrawFn) -> dict[str, Any]:
    port = draw(st.sampled_from([53, 636, 6636, 6817, 22, 443, 1000]))
    entry: dict[str, Any] = {"port": port, "protocol": draw(st.sampled_from(["TCP", "UDP"]))}
    if draw(st.integers(0, 3)) == 0:
        entry["endPort"] = port + draw(st.integers(0, 7000))
    if draw(st.integers(0, 5)) == 0:
        del entry["port"], entry["protocol"]
        entry.pop("endPort", None)
    return entry


@st.composite
def tenant_policies(draw: st.DrawFn, slug: str) -> list[dict[str, Any]]:
    """NetworkPolicies a contract may carry: selectors over the labels the paths' pods and namespaces carry."""
    values = ["login", "slurmctld", "kube-dns", "authentik-ldap-outpost", slug, f"login-{slug}", "web"]
    drawn = []
    for index in range(draw(st.integers(1, 4))):
        login = st.just({"matchLabels": {"app": "login"}})
        spec: dict[str, Any] = {"podSelector": draw(st.one_of(st.just({}), login, selectors(values)))}
        for direction, side in (("ingress", "from"), ("egress", "to")):
            if draw(st.booleans()):
                rules = st.fixed_dictionaries(
                    {},
                    optional={side: st.lists(peers(slug, values), max_size=3), "ports": st.lists(ports(), max_size=3)},
                )
                spec[direction] = draw(st.lists(rules, max_size=3))
        if draw(st.booleans()):
            spec["policyTypes"] = draw(
                st.lists(st.sampled_from(["Ingress", "Egress"]), min_size=1, max_size=2, unique=True)
            )
        drawn.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": f"p{index}"},
                "spec": spec,
            }
        )
    if draw(st.booleans()):
        dns = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}]}
        spec = {"podSelector": {}, "egress": [{**dns, "ports": [{"port": 53, "protocol": "UDP"}]}]}
        drawn.append(
            {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "dns"}, "spec": spec}
        )
    return drawn


@GENERATED
@given(contracts(), st.data())
def test_the_product_and_the_lab_agree_on_the_paths_a_contracts_own_policies_leave_open(
    drawn: Drawn, data: st.DataObject
) -> None:
    given_policies = data.draw(tenant_policies(drawn.data["slug"]))
    contract = TenantContract.model_validate({**drawn.data, "network": {"policies": given_policies}})
    written = manifests.network_policies(contract, OUTPOST_PORTS)
    lab = lab_blocked(lab_cluster(contract, written), contract)
    labels = {contract.namespace: manifests.namespace(contract)["metadata"]["labels"]}
    login = netpol.Endpoint(contract.namespace, login_labels(contract.slug))
    peers_found = {"slurmctld": {"app": "slurmctld"}, "authentik-ldap-outpost": {"app": "authentik-ldap-outpost"}}
    on_pod_ports = required_paths(OUTPOST_PORTS)[: len(REQUIRED_PATHS)]  # REQUIRED_PATHS' order
    blocked = netpol.unreachable(
        [NetworkPolicy.model_validate(p) for p in written], login, netpol.Cluster(labels), peers_found, on_pod_ports
    )
    # the lab's probes dial the Services' ports; the product's paths are on the pods' ports (636 -> 6636)
    product = {
        (dialled.port, dialled.protocol.value)
        for dialled, path in zip(REQUIRED_PATHS, on_pod_ports, strict=True)
        if path in blocked and path.direction == "egress"
    }
    dns_blocked = (53, "UDP") in product
    expected = {path for path in EGRESS if path in product or dns_blocked}
    assert lab == expected, f"lab blocks {sorted(lab)}, the product {sorted(product)}: {given_policies}"
    assert {p.port for p in REQUIRED_PATHS if p.direction == "ingress"} == {22}
