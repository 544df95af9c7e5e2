"""The LDAP outpost's Service: which pod port its LDAPS port 636 reaches, and whether that can be known.

A NetworkPolicy port is "a port on a pod" (Kubernetes API reference, NetworkPolicyPort,
https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/network-policy-v1/), not the Service's port.
tenantflow's NetworkPolicy step opens the pod port behind the outpost Service's 636 (``activities/kube/ports.py``:
the Service's ``targetPort``, a number, or a name looked up in the outpost pods' ``containerPorts``; the Authentik
outpost controller declares ``DeploymentPort(636, "ldaps", "tcp", 6636)``). The check reads the Service
(``GET /api/v1/namespaces/auth/services/authentik-ldap-outpost``) and, for a named ``targetPort``, the outpost
pods (Service API reference, https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/),
resolves the port as that step does, and fails when it leads to no pod port: the step would refuse the onboarding.
"""

from __future__ import annotations

from typing import Any

from tenantflow.activities.kube.ports import PortUnresolved, target_port
from tenantflow.models.network_policy import LDAP_OUTPOST, REQUIRED_PATHS
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "ldap.outpost_port"
GRANT = f"get on Services and list on Pods in the {LDAP_OUTPOST.peer_namespace} namespace"


def _service_port() -> int:
    return next(p.port for p in REQUIRED_PATHS if p.service == LDAP_OUTPOST.service)


def outpost_port(estate: Estate) -> Result:
    """Service port 636 of the outpost must lead to a pod port, the one tenantflow's NetworkPolicy opens."""
    port = _service_port()
    namespace = str(LDAP_OUTPOST.peer_namespace)
    where = f"Service {namespace}/{LDAP_OUTPOST.service}"
    service = estate.kube.get("Service", str(LDAP_OUTPOST.service), namespace)
    if service is None:
        return failed(NAME, f"no {where}", "deploy Authentik's LDAP outpost (its Service is named for the outpost)")
    spec: dict[str, Any] = service.get("spec") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    pods = estate.kube.list("Pod", namespace, label_selector=selector) if selector else []
    try:
        number = target_port(service, port, pods)
    except PortUnresolved as exc:
        found, _, fix = str(exc).partition("; ")
        return failed(NAME, found, fix)
    return ok(NAME, f"{where} maps {port} -> pod port {number}, the port tenantflow's NetworkPolicy opens")
