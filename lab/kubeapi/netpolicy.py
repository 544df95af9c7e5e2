"""The lab's enforcement of NetworkPolicy for its own probes (a login pod reaching slurmctld, the LDAP outpost).

A real cluster's CNI drops packets a NetworkPolicy does not allow; the lab has no packets, so the
stand-ins that play a pod's userland ask :func:`probe_blocked` before answering as if the connection
worked. Written from Kubernetes' documentation
(https://kubernetes.io/docs/concepts/services-networking/network-policies/), independently of
tenantflow's own evaluator, over the raw objects in the emulator's store:

* a connection needs the source's egress and the destination's ingress allowed;
* a pod no policy of its namespace selects (for that direction, per ``policyTypes``, which default to
  Ingress plus Egress when the policy has egress rules) is not isolated in that direction;
* an isolated pod allows what at least one rule of a selecting policy allows; absent ``from``/``to``
  means any peer, absent ``ports`` any port; a peer is ``podSelector`` (the policy's namespace),
  ``namespaceSelector`` (all pods there) or both (those pods there); ``ipBlock`` never matches a pod here;
* every namespace carries ``kubernetes.io/metadata.name`` as the apiserver sets it;
* a policy port is "a port on a pod" (API reference of ``NetworkPolicyPort``,
  https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/network-policy-v1/): a probe to a Service
  is matched on the pod port kube-proxy forwards it to, the Service port's ``targetPort`` (absent: the port
  itself; a name: the ``containerPort`` of that name in the selected pods; no such port: nothing answers), as the
  Service documentation says (https://kubernetes.io/docs/concepts/services-networking/service/#defining-a-service).
  A target without a Service (slurmd, reached pod to pod) is matched on its own pod port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import Store

Obj = dict[str, Any]
GROUP = "networking.k8s.io"


@dataclass(frozen=True)
class Target:
    """Something a pod connects to: a Service (its selector gives the pods' labels) and the Service's port, or,
    with ``service`` None, pods of ``fallback_labels`` and their own port."""

    namespace: str
    service: str | None
    port: int
    protocol: str = "TCP"
    fallback_labels: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.service or ",".join(f"{k}={v}" for k, v in self.fallback_labels)


DNS = Target("kube-system", "kube-dns", 53, "UDP", (("k8s-app", "kube-dns"),))
SLURMCTLD = Target("slurm-control", "slurmctld", 6817, "TCP", (("app", "slurmctld"),))
LDAP_OUTPOST = Target("auth", "authentik-ldap-outpost", 636, "TCP", (("app", "authentik-ldap-outpost"),))
SLURMD = Target("slurm-control", None, 6818, "TCP", (("app.kubernetes.io/component", "slurmd"),))
"""slurmd's pods, dialled by srun pod to pod on SlurmdPort (slurm.conf(5): default 6818)."""


def _selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": not (key in labels and labels[key] in values),
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _namespace_labels(store: Store, name: str) -> dict[str, str]:
    try:
        labels = dict(store.get("", "namespaces", name).get("metadata", {}).get("labels") or {})
    except ApiError:
        labels = {}
    return {**labels, "kubernetes.io/metadata.name": name}


def _policy_types(spec: Obj) -> list[str]:
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", "Egress"] if "egress" in spec else ["Ingress"]


def _peer_ok(store: Store, peer: Obj, policy_ns: str, other_ns: str, other_labels: dict[str, str]) -> bool:
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        if not _selector_matches(peer["namespaceSelector"], _namespace_labels(store, other_ns)):
            return False
    elif other_ns != policy_ns:
        return False
    return "podSelector" not in peer or _selector_matches(peer["podSelector"], other_labels)


def _port_ok(ports: list[Obj] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    for entry in ports:
        if entry.get("protocol", "TCP") != protocol:
            continue
        number = entry.get("port")
        if number is None or number == port or (isinstance(number, int) and number <= port <= entry.get("endPort", 0)):
            return True
    return False


Side = list[list[Obj] | None] | None
"""One end of a connection: None when no policy isolates the pod in that direction, else the ``ports`` of each
rule whose peers match the other end (a rule without ``ports`` admits any)."""


def _side(
    store: Store, ns: str, labels: dict[str, str], kind: str, other_ns: str, other_labels: dict[str, str]
) -> Side:
    """What the policies of the pod (ns, labels) say about connections with the other end in direction ``kind``
    (Ingress or Egress)."""
    rules_key, peers_key = ("egress", "to") if kind == "Egress" else ("ingress", "from")
    isolated = False
    admitting: list[list[Obj] | None] = []
    for policy in store.list(GROUP, "networkpolicies", ns):
        spec = policy.get("spec") or {}
        if not _selector_matches(spec.get("podSelector"), labels) or kind not in _policy_types(spec):
            continue
        isolated = True
        for rule in spec.get(rules_key) or []:
            peers = rule.get(peers_key) or []
            if not peers or any(_peer_ok(store, p, ns, other_ns, other_labels) for p in peers):
                admitting.append(rule.get("ports"))
    return admitting if isolated else None


def _side_allows(side: Side, port: int, protocol: str) -> bool:
    return side is None or any(_port_ok(ports, port, protocol) for ports in side)


def _service(store: Store, target: Target) -> Obj | None:
    if target.service is None:
        return None
    try:
        return store.get("", "services", target.service, target.namespace)
    except ApiError:
        return None


def _target_labels(store: Store, target: Target) -> dict[str, str]:
    service = _service(store, target)
    selector = (service or {}).get("spec", {}).get("selector")
    return dict(selector or dict(target.fallback_labels))


def pod_port(store: Store, target: Target) -> int | None:
    """The pod port a connection to ``target`` reaches (kube-proxy's rewrite of a Service port to its
    ``targetPort``); None when the Service has no such port or names a container port no selected pod declares."""
    service = _service(store, target)
    if service is None:
        return target.port
    entry = next(
        (
            p
            for p in (service.get("spec") or {}).get("ports") or []
            if p.get("port") == target.port and p.get("protocol", "TCP") == target.protocol
        ),
        None,
    )
    if entry is None:
        return None
    wanted = entry.get("targetPort", target.port)
    if isinstance(wanted, int):
        return wanted
    selector = ",".join(f"{k}={v}" for k, v in _target_labels(store, target).items())
    for pod in store.list("", "pods", target.namespace, label_selector=selector):
        for container in (pod.get("spec") or {}).get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") == wanted and port.get("protocol", "TCP") == target.protocol:
                    return int(port["containerPort"])
    return None


def probe_blocked(store: Store, namespace: str, pod: str, target: Target) -> str | None:
    """Why a connection from ``pod`` to ``target`` (after resolving its name through DNS) would be dropped,
    or None when the policies of both ends allow it."""
    try:
        labels = dict(store.get("", "pods", pod, namespace).get("metadata", {}).get("labels") or {})
    except ApiError:
        return f"pod {namespace}/{pod} does not exist"
    for hop in (DNS, target):
        hop_labels = _target_labels(store, hop)
        port = pod_port(store, hop)
        dialled = f"{hop.name}.{hop.namespace}:{hop.port}/{hop.protocol}"
        if port is None:
            return f"no pod answers {dialled} (the Service's targetPort leads to no container port)"
        egress = _side_allows(_side(store, namespace, labels, "Egress", hop.namespace, hop_labels), port, hop.protocol)
        ingress = _side_allows(
            _side(store, hop.namespace, hop_labels, "Ingress", namespace, labels), port, hop.protocol
        )
        if not (egress and ingress):
            side = "egress" if not egress else "ingress"
            via = f", pod port {port}" if port != hop.port else ""
            return f"NetworkPolicy drops {namespace}/{pod} -> {dialled} ({side}{via})"
    return None


def callback_blocked(store: Store, namespace: str, pod: str, source: Target, ports: range) -> str | None:
    """Why a connection the pods of ``source`` open back to ``pod`` on any of ``ports`` would be dropped (the
    first port that is), or None when every port is allowed on both ends."""
    try:
        labels = dict(store.get("", "pods", pod, namespace).get("metadata", {}).get("labels") or {})
    except ApiError:
        return f"pod {namespace}/{pod} does not exist"
    peer = _target_labels(store, source)
    source_side = _side(store, source.namespace, peer, "Egress", namespace, labels)
    pod_side = _side(store, namespace, labels, "Ingress", source.namespace, peer)
    for port in ports:
        egress = _side_allows(source_side, port, source.protocol)
        ingress = _side_allows(pod_side, port, source.protocol)
        if not (egress and ingress):
            side = "egress" if not egress else "ingress"
            dialled = f"{namespace}/{pod}:{port}/{source.protocol}"
            return f"NetworkPolicy drops {source.name}.{source.namespace} -> {dialled} ({side})"
    return None
