"""What worker bootstrap installs on a worker cluster, and where each kind lives in the Kubernetes API.

Everything carries ``trainy.ai/installed-by=tenantflow`` and the worker's identity label; secret values are
filled in at install time, never here.
"""

from __future__ import annotations

from typing import Any

from tenantflow.models.enrollment_workflows import (
    AGENT,
    AGENT_NAMESPACE,
    BOOTSTRAP_SECRET,
    BYOC_NAMESPACE,
    INSTALLED_BY,
    INSTALLER,
    WORKER_LABEL,
    EnrollmentStep,
    label_value,
)

Obj = dict[str, Any]
VM_OPERATOR = ("victoria-metrics", "victoria-metrics-operator")


def _labels(step: EnrollmentStep, component: str) -> dict[str, str]:
    return {
        INSTALLED_BY: INSTALLER,
        "trainy.ai/component": component,
        WORKER_LABEL: label_value(step.contract.worker_identity),
    }


def _deployment(namespace: str, name: str, image: str, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"serviceAccountName": AGENT, "containers": [{"name": name, "image": image}]},
            },
        },
    }


def install_objects(step: EnrollmentStep) -> list[Obj]:
    """What bootstrap installs, in order, without secret values."""

    def labels(component: str) -> dict[str, str]:
        return _labels(step, component)

    def meta(name: str, component: str, namespace: str | None = None) -> Obj:
        return {"name": name, **({"namespace": namespace} if namespace else {}), "labels": labels(component)}

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(AGENT_NAMESPACE, "agent")},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(BYOC_NAMESPACE, "observability")},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(AGENT, "agent", AGENT_NAMESPACE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(AGENT, "rbac"),
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(AGENT, "rbac"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT, "namespace": AGENT_NAMESPACE}],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": meta("trainy-tunnel-credentials", "tunnel", AGENT_NAMESPACE),
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": meta(BOOTSTRAP_SECRET, "bootstrap", AGENT_NAMESPACE),
        },
        _deployment(AGENT_NAMESPACE, AGENT, "ghcr.io/trainy-ai/worker-agent:v1", labels("agent")),
        _deployment(
            BYOC_NAMESPACE, "trainy-log-collector", "ghcr.io/trainy-ai/log-collector:v1", labels("log-collector")
        ),
        _deployment(BYOC_NAMESPACE, "trainy-metrics-agent", "ghcr.io/trainy-ai/vmagent:v1", labels("metrics-agent")),
    ]


def namespace_of(obj: Obj) -> str | None:
    return obj["metadata"].get("namespace")
