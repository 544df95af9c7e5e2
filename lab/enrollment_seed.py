"""Start-up state of the enrollment lab: Hub and worker CRDs, namespaces, brownfield work, the hub user policy.

:func:`seed_hub` installs the trainy.ai/Kueue/JobSet CRDs of ``lab/crds_enrollment/``,
namespaces ``forecasting`` and ``kube-system`` and the ``forecasting`` Organization.
:func:`seed_worker` installs the Kueue/JobSet CRDs, namespaces ``default``,
``forecasting``, ``kube-system``, cert-manager and a shared VictoriaMetrics operator;
with ``brownfield=True`` also Kueue v0.14.8 and JobSet v0.7.2 Deployments, the five
unlabelled ``gke-dws`` objects (matching the preset) and a running JobSet with its
Job and admitted Workload in ``forecasting``. :func:`seed_pool_member` adds an
already enrolled, dispatch-ready second WorkerCluster of the tenant (its Hub objects
and its own worker store), so canaries can be routed across a pool.
:func:`hub_policies` is the data the lab launcher passes to the Hub emulator's ``policies``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tenantflow.lab.controllers.hub import CONFIG_REPORT, HEARTBEAT, LAB_CONTEXT
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.workloads import deployment
from tenantflow.models.enrollment_workflows import (
    MANAGED_BY,
    SCHEDULING_MANAGER,
    WORKER_LABEL,
    label_value,
    preset_objects,
)

CRD_DIR = Path(__file__).parent / "crds_enrollment"
TENANT_NS = "forecasting"
ORG_ADMIN_TOKEN = "forecasting-org-admin-token"
OLD_KUEUE = "registry.k8s.io/kueue/kueue:v0.14.8"
OLD_JOBSET = "registry.k8s.io/jobset/jobset:v0.7.2"
Obj = dict[str, Any]


def crds(groups: tuple[str, ...]) -> list[Obj]:
    docs = [yaml.safe_load(path.read_text()) for path in sorted(CRD_DIR.glob("*.yaml"))]
    return [d for d in docs if d["spec"]["group"] in groups]


def hub_policies(token: str = ORG_ADMIN_TOKEN, namespace: str = TENANT_NS) -> dict[str, Any]:
    """An organization admin: enrollment objects in the tenant namespace, nothing cluster-scoped."""
    return {
        token: {
            "user": f"{namespace}-admin",
            "groups": ["konduktor-hub-users", f"{namespace}-admins"],
            "rules": [
                {
                    "verbs": ["*"],
                    "apiGroups": ["trainy.ai"],
                    "resources": ["bootstrapenrollments", "workerclusters"],
                    "namespaces": [namespace],
                },
                {"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"], "namespaces": [namespace]},
                {"verbs": ["*"], "apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "namespaces": [namespace]},
                {
                    "verbs": ["get", "list"],
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["*"],
                    "namespaces": [namespace],
                },
            ],
        }
    }


def _ns(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def seed_hub(store: Store) -> None:
    store.seed(crds(("trainy.ai", "kueue.x-k8s.io", "jobset.x-k8s.io")))
    store.seed(
        [
            _ns(TENANT_NS),
            _ns("kube-system"),
            {
                "apiVersion": "trainy.ai/v1alpha1",
                "kind": "Organization",
                "metadata": {"name": TENANT_NS},
                "spec": {"namespaces": [TENANT_NS], "kueueVersion": "v0.16.1", "jobsetVersion": "v0.8.1"},
            },
        ]
    )


def _running_work(namespace: str, name: str) -> list[Obj]:
    queue = {"kueue.x-k8s.io/queue-name": "user-queue"}
    return [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace, "labels": queue},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {}}}]},
            "status": {"restarts": 0, "replicatedJobsStatus": [{"name": "workers", "active": 1, "ready": 1}]},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"{name}-workers-0",
                "namespace": namespace,
                "labels": {"jobset.sigs.k8s.io/jobset-name": name},
            },
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "train", "image": "trainer:1"}], "restartPolicy": "Never"}
                }
            },
            "status": {"active": 1, "ready": 1},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": f"jobset-{name}", "namespace": namespace, "labels": queue},
            "spec": {"queueName": "user-queue", "podSets": [{"name": "workers", "count": 1}]},
            "status": {
                "admission": {"clusterQueue": "cluster-queue"},
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
                    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
                ],
            },
        },
    ]


def seed_worker(store: Store, brownfield: bool = False) -> None:
    store.seed(crds(("kueue.x-k8s.io", "jobset.x-k8s.io")))
    store.seed([_ns(n) for n in ("default", TENANT_NS, "kube-system", "cert-manager", "victoria-metrics")])
    store.seed(
        [
            deployment("cert-manager", "cert-manager", "quay.io/jetstack/cert-manager-controller:v1.16.2"),
            deployment(
                "victoria-metrics",
                "victoria-metrics-operator",
                "victoriametrics/operator:v0.50.0",
                {"app.kubernetes.io/name": "victoria-metrics-operator"},
            ),
        ]
    )
    if not brownfield:
        return
    store.seed(
        [
            _ns("kueue-system"),
            _ns("jobset-system"),
            deployment("kueue-system", "kueue-controller-manager", OLD_KUEUE),
            deployment("jobset-system", "jobset-controller-manager", OLD_JOBSET),
        ]
    )
    store.seed(preset_objects("gke-dws", [TENANT_NS]))
    store.seed(_running_work(TENANT_NS, "train-llm") + _running_work(TENANT_NS, "eval-sweep"))


def seed_pool_member(hub: Store, worker: Store, name: str, context: str, namespace: str = TENANT_NS) -> None:
    """WorkerCluster ``name`` (lab context ``context``): redeemed, connected, configured at generation 1, with
    the ``gke-dws`` preset objects it owns on ``worker``; the Hub controller makes it DispatchReady."""
    identity = label_value(f"{len(namespace)}-{namespace}-{name}")
    seed_worker(worker)
    owned = {MANAGED_BY: SCHEDULING_MANAGER, WORKER_LABEL: identity}
    worker.seed(
        [{**obj, "metadata": {**obj["metadata"], "labels": owned}} for obj in preset_objects("gke-dws", [namespace])]
    )
    report = json.dumps(
        {"ok": True, "reason": "Applied", "message": "scheduling preset applied", "generation": 1}, sort_keys=True
    )
    hub.seed(
        [
            {
                "apiVersion": "trainy.ai/v1alpha1",
                "kind": "BootstrapEnrollment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "workerName": name,
                    "publicKey": "",
                    "enrollmentId": f"enroll/{namespace}/{name}",
                    "schedulingPreset": "gke-dws",
                    "workloadNamespaces": [namespace],
                },
                "status": {"usedAt": now(), "workerCluster": name},
            },
            {
                "apiVersion": "trainy.ai/v1alpha1",
                "kind": "WorkerCluster",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {WORKER_LABEL: identity},
                    "annotations": {HEARTBEAT: now(), LAB_CONTEXT: context, CONFIG_REPORT: report},
                },
                "spec": {
                    "cordoned": False,
                    "enrollment": name,
                    "workloadNamespaces": [namespace],
                    "scheduling": {"preset": "gke-dws"},
                },
            },
        ]
    )
