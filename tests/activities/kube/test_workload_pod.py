"""Finding the slurmctld pod the way ``kubectl exec`` does, on the kube emulator: through a Deployment's selector
(SUNK) or a StatefulSet's (Slinky's ``slurmctld-0``), and a clear error when neither exists."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeclient import workload_pod
from tests.activities.kube.conftest import Lab

NAMESPACE = "slinky"


def _objects(kind: str, name: str, pods: dict[str, str]) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "slurm"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "slurmctld", "image": "slurmctld:25.05"}]},
    }
    workload = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": labels}, "template": template}
        | ({"serviceName": name} if kind == "StatefulSet" else {}),
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        workload,
        *(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": NAMESPACE, "labels": labels},
                "spec": template["spec"],
                "status": {"phase": phase},
            }
            for pod, phase in pods.items()
        ),
    ]


def test_a_statefulset_controller_is_found_by_its_selector(lab: Lab) -> None:
    for obj in _objects("StatefulSet", "slurmctld", {"slurmctld-0": "Running"}):
        lab.store.create(obj)
    assert workload_pod(lab.target, NAMESPACE, "slurmctld") == "slurmctld-0"


def test_a_deployment_controller_is_found_by_its_selector(lab: Lab) -> None:
    pods = {"slurmctld-7d9f-abcde": "Pending", "slurmctld-7d9f-fghij": "Running"}
    for obj in _objects("Deployment", "slurmctld", pods):
        lab.store.create(obj)
    assert workload_pod(lab.target, NAMESPACE, "slurmctld") == "slurmctld-7d9f-fghij"


def test_no_controller_names_the_setting(lab: Lab) -> None:
    lab.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    with pytest.raises(ApplicationError) as missing:
        workload_pod(lab.target, NAMESPACE, "slurmctld")
    assert missing.value.non_retryable and "no Deployment or StatefulSet slinky/slurmctld" in missing.value.message
    assert "SLURM_CONTROLLER" in missing.value.message


def test_a_selector_with_match_expressions_selects_only_the_controllers_pods(lab: Lab) -> None:
    """A selector's matchExpressions count as much as its matchLabels: a pod of another release that shares the
    name label is not the controller."""
    objects = _objects("StatefulSet", "slurmctld", {"slurmctld-0": "Running"})
    workload = objects[1]
    workload["spec"]["selector"] = {
        "matchLabels": {"app.kubernetes.io/name": "slurmctld"},
        "matchExpressions": [{"key": "app.kubernetes.io/instance", "operator": "In", "values": ["slurm"]}],
    }
    decoy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "other-slurmctld-0",
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "other"},
        },
        "spec": workload["spec"]["template"]["spec"],
        "status": {"phase": "Running"},
    }
    for obj in [*objects, decoy]:
        lab.store.create(obj)
    assert workload_pod(lab.target, NAMESPACE, "slurmctld") == "slurmctld-0"
