"""The LDAP outpost's Service: which pod port its LDAPS port 636 reaches.

A NetworkPolicy port is "a port on a pod" (Kubernetes API reference, NetworkPolicyPort,
https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/network-policy-v1/), not the Service's port:
traffic to Service port 636 passes a policy only when the policy allows the Service's ``targetPort`` (the
Authentik outpost controller declares ``DeploymentPort(636, "ldaps", "tcp", 6636)``). tenantflow's tenant
policy opens the port of :data:`models.network_policy.REQUIRED_PATHS` for the outpost, so the check reads the
Service (``GET /api/v1/namespaces/auth/services/authentik-ldap-outpost``) and, for a named ``targetPort``, the
outpost pods' ``containerPorts`` (Service API reference,
https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/#ServiceSpec).
"""

from __future__ import annotations

from typing import Any

from tenantflow.models.network_policy import LDAP_OUTPOST, REQUIRED_PATHS
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "ldap.outpost_port"
GRANT = f"get on Services and list on Pods in the {LDAP_OUTPOST.peer_namespace} namespace"


def _policy_port() -> int:
    return next(p.port for p in REQUIRED_PATHS if p.service == LDAP_OUTPOST.service)


def _named_port(estate: Estate, selector: dict[str, str], name: str) -> int | None:
    """The number of the container port ``name`` in the pods the Service selects."""
    query = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    for pod in estate.kube.list("Pod", LDAP_OUTPOST.peer_namespace, label_selector=query or None):
        for container in (pod.get("spec") or {}).get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") == name:
                    return int(port["containerPort"])
    return None


def outpost_port(estate: Estate) -> Result:
    """Service port 636 of the outpost must reach pod port 636, the one tenantflow's NetworkPolicy opens."""
    want = _policy_port()
    where = f"Service {LDAP_OUTPOST.peer_namespace}/{LDAP_OUTPOST.service}"
    service = estate.kube.get("Service", LDAP_OUTPOST.service, LDAP_OUTPOST.peer_namespace)
    if service is None:
        return failed(NAME, f"no {where}", "deploy Authentik's LDAP outpost (its Service is named for the outpost)")
    spec: dict[str, Any] = service.get("spec") or {}
    port = next((p for p in spec.get("ports") or [] if p.get("port") == want), None)
    if port is None:
        listed = ", ".join(str(p.get("port")) for p in spec.get("ports") or []) or "none"
        return failed(NAME, f"{where} has no port {want} (ports: {listed})", f"expose LDAPS on port {want}")
    target: Any = port.get("targetPort", want)
    number = _named_port(estate, spec.get("selector") or {}, target) if isinstance(target, str) else int(target)
    if number is None:
        return failed(
            NAME,
            f"{where} maps {want} -> port name {target!r}, which no outpost pod declares",
            "fix the outpost Deployment's containerPorts or the Service's targetPort",
        )
    if number != want:
        return failed(
            NAME,
            f"{where} maps {want} -> pod port {number}; tenantflow's NetworkPolicy allows the login pod {want}/TCP "
            "to the outpost pods, and policy ports are pod ports: LDAPS from the login pod would be dropped",
            f"give the contract network.policies an egress rule to the outpost pods on {number}/TCP (until "
            f"tenantflow computes policies from the Service's targetPort), or serve LDAPS on pod port {want}",
        )
    return ok(NAME, f"{where} maps {want} -> pod port {number}, the port tenantflow's NetworkPolicy allows")
