"""Ready Deployments as the lab shows them: what the seeded worker clusters run and what the lab's agent installs.

There is no kubelet in the lab, so a Deployment is created with the status a healthy rollout reports.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def deployment(namespace: str, name: str, image: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        },
        "status": {"replicas": 1, "readyReplicas": 1},
    }
