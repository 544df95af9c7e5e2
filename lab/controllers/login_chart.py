"""What the lab's login chart renders from a Flux HelmRelease, and the status helm-controller writes back.

The chart (``sunk-login``, the lab's own): a pod per replica named as a StatefulSet names them, labelled ``app=login``,
Helm's ``app.kubernetes.io/instance=<release>`` and ``app.kubernetes.io/managed-by=<values.tenant>``, its ``sshd``
container with the values' ``securityContext`` (the pod with ``podSecurityContext``) and the ``sshKeysSecret``
mounted at ``/etc/ssh/authorized_keys.d``; a LoadBalancer Service with the values' ``service`` annotations. The
status: Flux's HelmRelease v2 (fluxcd/helm-controller ``api/v2/helmrelease_types.go``, ``condition_types.go``),
conditions ``Ready`` and ``Released`` worded as ``internal/reconcile/install.go`` words an install.
"""

from __future__ import annotations

from typing import Any

from tenantflow.lab.kubeapi.store import now

GROUP = "helm.toolkit.fluxcd.io"
INSTANCE_LABEL = "app.kubernetes.io/instance"
CONTAINER = "sshd"
KEYS_DIR = "/etc/ssh/authorized_keys.d"
Obj = dict[str, Any]


def values(release: Obj) -> Obj:
    return dict(release["spec"].get("values") or {})


def pod(release: Obj, index: int) -> Obj:
    chart_values = values(release)
    name, ns = release["metadata"]["name"], release["metadata"]["namespace"]
    container: Obj = {"name": CONTAINER, "image": "sunk-login", "ports": [{"containerPort": 22}]}
    if chart_values.get("securityContext"):
        container["securityContext"] = chart_values["securityContext"]
    container["volumeMounts"] = [{"name": "authorized-keys", "mountPath": KEYS_DIR, "readOnly": True}]
    spec: Obj = {
        "hostname": f"{name}-{index}",
        "containers": [container],
        "volumes": [{"name": "authorized-keys", "secret": {"secretName": str(chart_values.get("sshKeysSecret", ""))}}],
    }
    if chart_values.get("podSecurityContext"):
        spec["securityContext"] = chart_values["podSecurityContext"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{index}",
            "namespace": ns,
            "labels": {
                "app": "login",
                INSTANCE_LABEL: name,
                "app.kubernetes.io/managed-by": str(chart_values.get("tenant", ns)),
            },
        },
        "spec": spec,
    }


def service(release: Obj) -> Obj:
    service_values = values(release).get("service") or {}
    name, ns = release["metadata"]["name"], release["metadata"]["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "annotations": dict(service_values.get("annotations") or {})},
        "spec": {
            "type": service_values.get("type", "LoadBalancer"),
            "selector": {INSTANCE_LABEL: name},
            "ports": [{"name": "ssh", "port": 22, "protocol": "TCP"}],
        },
    }


def chart(release: Obj) -> str:
    """``<chart>@<version>`` of ``spec.chart.spec``."""
    template = ((release["spec"].get("chart") or {}).get("spec")) or {}
    return f"{template.get('chart', '')}@{template.get('version', '*')}"


def conditions_of(release: Obj, refused: str | None) -> list[Obj]:
    """Ready and Released as helm-controller's install writes them (``internal/reconcile/install.go``)."""
    ns, name = release["metadata"]["namespace"], release["metadata"]["name"]
    if refused is None:
        status, reason = "True", "InstallSucceeded"
        message = f"Helm install succeeded for release {ns}/{name}.v1 with chart {chart(release)}"
    else:
        status, reason = "False", "InstallFailed"
        message = f"Helm install failed for release {ns}/{name} with chart {chart(release)}: {refused}"
    generation = release["metadata"].get("generation", 1)
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": now(),
        }
        for kind in ("Ready", "Released")
    ]


def same(old: list[Obj], new: list[Obj]) -> bool:
    def strip(conditions: list[Obj]) -> list[Obj]:
        return [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in conditions]

    return strip(old) == strip(new)
