"""Would the tenant's login pod still work under a set of NetworkPolicies? (pure, Kubernetes' semantics)

Kubernetes' documented NetworkPolicy semantics
(https://kubernetes.io/docs/concepts/services-networking/network-policies/):

* a pod is isolated for a direction when at least one policy in its namespace selects it
  (``podSelector``) and lists that direction in ``policyTypes`` (defaulted: Ingress always, Egress when
  the policy has ``egress`` rules); a pod no policy isolates allows everything in that direction;
* policies are additive: an isolated pod allows a connection when any rule of any selecting policy
  allows it; a policy with no rules for a direction (deny-all) allows nothing there;
* a rule with no peers matches every peer, one with no ports every port; a peer with only
  ``podSelector`` means pods of the policy's own namespace, with only ``namespaceSelector`` every pod
  of the matching namespaces, with both the matching pods of the matching namespaces; ``ipBlock``
  is for addresses outside the cluster (here: the SSH clients);
* a port matches by protocol (default TCP) and number, or ``port..endPort``; a named port is matched
  by the container port names the caller knows.

Egress is checked on the login pod's side only (the platform namespaces' own ingress policies are not
the tenant's to write).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tenantflow.models.network_policy import (
    REQUIRED_PATHS,
    LabelSelector,
    NetworkPolicy,
    Peer,
    PolicyPort,
    RequiredPath,
)

NAME_LABEL = "kubernetes.io/metadata.name"
NAMED_PORTS = {"ssh": 22, "dns": 53, "dns-tcp": 53, "ldaps": 636, "slurmctld": 6817}


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace and labels), or an address outside the cluster when ``namespace`` is None."""

    namespace: str | None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Cluster:
    """What the evaluation needs to know about the cluster: every namespace's labels."""

    namespace_labels: Mapping[str, Mapping[str, str]]

    def labels_of(self, namespace: str) -> dict[str, str]:
        return {NAME_LABEL: namespace, **self.namespace_labels.get(namespace, {})}


def _selects(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    return selector.matches(dict(labels))


def _peer_matches(peer: Peer, policy_ns: str, other: Endpoint, cluster: Cluster) -> bool:
    if other.namespace is None:
        return peer.ip_block is not None
    if peer.ip_block is not None:
        return False
    if peer.namespace_selector is not None:
        if not _selects(peer.namespace_selector, cluster.labels_of(other.namespace)):
            return False
    elif other.namespace != policy_ns:
        return False
    return peer.pod_selector is None or _selects(peer.pod_selector, other.labels)


Span = tuple[int, int]
"""An inclusive range of port numbers."""

EVERY_PORT: Span = (0, 65535)


def _rule_spans(ports: Iterable[PolicyPort], protocol: str) -> list[Span]:
    """The ports of ``protocol`` a rule's ``ports`` list admits (no list: every port)."""
    ports = list(ports)
    if not ports:
        return [EVERY_PORT]
    spans = []
    for rule in ports:
        if rule.protocol.value != protocol:
            continue
        if rule.port is None:
            return [EVERY_PORT]
        number = NAMED_PORTS.get(rule.port) if isinstance(rule.port, str) else rule.port
        if number is not None:
            spans.append((number, max(number, rule.end_port or number)))
    return spans


def _peers_match(peers: list[Peer], policy_ns: str, other: Endpoint, cluster: Cluster) -> bool:
    return not peers or any(_peer_matches(p, policy_ns, other, cluster) for p in peers)


def allowed_spans(
    policies: Iterable[NetworkPolicy], pod: Endpoint, other: Endpoint, protocol: str, direction: str, cluster: Cluster
) -> list[Span]:
    """The ports on which ``pod`` may open (egress) or accept (ingress) a connection with ``other``: every port
    when no policy isolates the pod in that direction, else the union of what the rules that match ``other``
    admit (policies are additive)."""
    kind = "Egress" if direction == "egress" else "Ingress"
    selecting = [
        p
        for p in policies
        if (p.metadata.namespace or pod.namespace) == pod.namespace
        and _selects(p.spec.pod_selector, pod.labels)
        and kind in p.spec.types()
    ]
    if not selecting:
        return [EVERY_PORT]
    spans = []
    for policy in selecting:
        ns = policy.metadata.namespace or str(pod.namespace)
        if direction == "egress":
            rules = [(rule.to, rule.ports) for rule in policy.spec.egress or []]
        else:
            rules = [(rule.from_, rule.ports) for rule in policy.spec.ingress or []]
        for peers, ports in rules:
            if _peers_match(peers, ns, other, cluster):
                spans.extend(_rule_spans(ports, protocol))
    return spans


def covers(spans: Iterable[Span], low: int, high: int) -> bool:
    """Whether the union of ``spans`` holds every port of ``low..high``."""
    reach = low
    for start, end in sorted(spans):
        if start > reach:
            return False
        reach = max(reach, end + 1)
        if reach > high:
            return True
    return reach > high


def unreachable(
    policies: Iterable[NetworkPolicy],
    login: Endpoint,
    cluster: Cluster,
    peers: Mapping[str, Mapping[str, str]] | None = None,
    paths: Iterable[RequiredPath] = REQUIRED_PATHS,
) -> list[RequiredPath]:
    """The required paths the policies block (a path with a port range: when any port of it is blocked); ``peers``
    maps a Service name to its pods' labels; the paths' ports are pod ports (``activities/kube/ports.py``)."""
    policies = list(policies)
    found = peers or {}
    blocked = []
    for path in paths:
        labels = found.get(path.service or "", path.peer_labels)
        other = Endpoint(path.peer_namespace, labels)
        spans = allowed_spans(policies, login, other, path.protocol.value, path.direction, cluster)
        if not covers(spans, path.port, path.end_port or path.port):
            blocked.append(path)
    return blocked


def explain(blocked: Iterable[RequiredPath]) -> str:
    return "; ".join(f"{p.label} is not allowed ({p.why})" for p in blocked)
