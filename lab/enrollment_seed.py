"""Start-up state of the enrollment lab: Hub and worker CRDs, namespaces, brownfield work, the hub user policy.

:func:`seed_hub` installs the trainy.ai/Kueue/JobSet CRDs of ``lab/crds_enrollment/``,
namespaces ``forecasting`` and ``kube-system`` and the ``forecasting`` Organization.
:func:`seed_worker` installs the Kueue/JobSet CRDs, namespaces ``default``,
``forecasting``, ``kube-system``, cert-manager and a shared VictoriaMetrics operator;
with ``brownfield=True`` also Kueue v0.14.8 and JobSet v0.7.2 Deployments, the five
unlabelled ``gke-dws`` objects as the customer applied them (``lab/brownfield/kueue-setup.yaml``
created through the API, which defaults and normalizes them) and running JobSets with their
Jobs and admitted Workloads in ``forecasting``. ``kueue_versions`` picks the Kueue flavour:
:data:`KUEUE_BOTH` (v1beta1 and v1beta2 served) or :data:`KUEUE_V1BETA1` (only v1beta1).
:func:`seed_pool_member` adds an already enrolled, dispatch-ready second WorkerCluster of the tenant (its Hub objects
and its own worker store), so canaries can be routed across a pool.
:func:`hub_policies` is the data the lab launcher passes to the Hub emulator's ``policies``.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tenantflow.lab.controllers.hub import CONFIG_REPORT, HEARTBEAT, LAB_CONTEXT
from tenantflow.lab.konduktor.facts import MANAGED_BY, SCHEDULING_MANAGER, WORKER_LABEL, preset_objects, worker_identity
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.kueue_facts import JOBSET_DEPLOYMENT, KUEUE_DEPLOYMENT, QUEUE_LABEL
from tenantflow.lab.workloads import deployment

CRD_DIR = Path(__file__).parent / "crds_enrollment"
BROWNFIELD_KUEUE = Path(__file__).parent / "brownfield" / "kueue-setup.yaml"
KUEUE_BOTH = ("v1beta1", "v1beta2")
"""Kueue >= 0.15: serves v1beta1 and v1beta2 (stores v1beta2 from 0.16)."""
KUEUE_V1BETA1 = ("v1beta1",)
"""Kueue <= 0.14: serves and stores only v1beta1."""
TENANT_NS = "forecasting"
ORG_ADMIN_TOKEN = "forecasting-org-admin-token"
OLD_KUEUE = "registry.k8s.io/kueue/kueue:v0.14.8"
OLD_JOBSET = "registry.k8s.io/jobset/jobset:v0.7.2"
Obj = dict[str, Any]


@lru_cache(maxsize=1)
def _crd_files() -> tuple[Obj, ...]:
    """The CRDs of ``lab/crds_enrollment/``, parsed once (the vendored JobSet CRD alone is 250 kB of YAML)."""
    return tuple(yaml.safe_load(path.read_text()) for path in sorted(CRD_DIR.glob("*.yaml")))


def crds(groups: tuple[str, ...], kueue_versions: tuple[str, ...] = KUEUE_BOTH) -> list[Obj]:
    """The CRDs of ``groups``; Kueue's serve only ``kueue_versions`` (the last one is the storage version)."""
    docs = [copy.deepcopy(doc) for doc in _crd_files() if doc["spec"]["group"] in groups]
    for doc in docs:
        if doc["spec"]["group"] == "kueue.x-k8s.io":
            versions = [v for v in doc["spec"]["versions"] if v["name"] in kueue_versions]
            doc["spec"]["versions"] = [{**v, "storage": v["name"] == kueue_versions[-1]} for v in versions]
    return docs


def kueue_version(store: Store) -> str:
    """The version a Kueue controller of ``store`` writes (its storage version)."""
    rt = store.registry.get("kueue.x-k8s.io", "workloads")
    return rt.storage_version if rt is not None else "v1beta2"


KUBECTL_APPLY_MANAGER = "kubectl-client-side-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def apply_manifests(store: Store, text: str) -> list[Obj]:
    """``kubectl apply -f`` of plain manifests, as kubectl's client-side apply creates a new object: the manifest
    (its JSON kept in the ``last-applied-configuration`` annotation) is created through the API (defaults,
    normalization) under kubectl's field manager."""
    created = []
    for doc in (d for d in yaml.safe_load_all(text) if d):
        annotations = doc.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[LAST_APPLIED] = json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"
        created.append(store.create(doc, manager=KUBECTL_APPLY_MANAGER))
    return created


def hub_policies(token: str = ORG_ADMIN_TOKEN, namespace: str = TENANT_NS) -> dict[str, Any]:
    """An organization admin: enrollment objects in the tenant namespace; of the cluster-scoped objects only reads
    of Organizations (what the organization selected: its namespaces, Kueue and JobSet versions, preset), never a
    write (the runbook: the check ``auth can-i create organizations.trainy.ai`` must print ``no``)."""
    return {
        token: {
            "user": f"{namespace}-admin",
            "groups": ["konduktor-hub-users", f"{namespace}-admins"],
            "rules": [
                {"verbs": ["get", "list"], "apiGroups": ["trainy.ai"], "resources": ["organizations"]},
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
                "spec": {
                    "namespaces": [TENANT_NS],
                    "kueueVersion": "v0.16.1",
                    "jobsetVersion": "v0.8.1",
                    "schedulingPreset": "gke-dws",
                },
            },
        ]
    )


def _running_work(namespace: str, name: str, kueue: str) -> list[Obj]:
    queue = {QUEUE_LABEL: "user-queue"}
    pod = {"spec": {"containers": [{"name": "train", "image": "trainer:1"}], "restartPolicy": "Never"}}
    return [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace, "labels": queue},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {"template": pod}}}]},
            "status": {
                "restarts": 0,
                "replicatedJobsStatus": [
                    {"name": "workers", "active": 1, "ready": 1, "failed": 0, "succeeded": 0, "suspended": 0}
                ],
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"{name}-workers-0",
                "namespace": namespace,
                "labels": {"jobset.sigs.k8s.io/jobset-name": name},
            },
            "spec": {"template": pod},
            "status": {"active": 1, "ready": 1},
        },
        {
            "apiVersion": f"kueue.x-k8s.io/{kueue}",
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


def seed_worker(store: Store, brownfield: bool = False, kueue_versions: tuple[str, ...] = KUEUE_BOTH) -> None:
    store.seed(crds(("kueue.x-k8s.io", "jobset.x-k8s.io"), kueue_versions))
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
            deployment(*KUEUE_DEPLOYMENT, OLD_KUEUE),
            deployment(*JOBSET_DEPLOYMENT, OLD_JOBSET),
        ]
    )
    apply_manifests(store, BROWNFIELD_KUEUE.read_text())
    kueue = kueue_version(store)
    store.seed(_running_work(TENANT_NS, "train-llm", kueue) + _running_work(TENANT_NS, "eval-sweep", kueue))


def seed_pool_member(hub: Store, worker: Store, name: str, context: str, namespace: str = TENANT_NS) -> None:
    """WorkerCluster ``name`` (lab context ``context``): redeemed, connected, configured at generation 1, with
    the ``gke-dws`` preset objects it owns on ``worker``; the Hub controller makes it DispatchReady."""
    identity = worker_identity(namespace, name)
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
