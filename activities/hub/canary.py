"""The Hub-side canary of an enrollment: ``hub.canary`` runs a short JobSet through ``user-queue`` on the Hub.

The canary (:func:`canary_jobset`) must be dispatched by the Hub's Kueue and complete within
:data:`CANARY_BUDGET_S`; the finding names the worker it ran on when the Hub says so (:func:`_cluster_of`).
Reads, the create and the delete go to the explicit Hub target through
:class:`activities.common.kubeobjects.KubeObjects`; the wait polls with heartbeats and backoff. For an
exact-routing canary the workflow first holds the rest of the pool (``hub.cordon_pool``,
:mod:`activities.hub.cordon`).

The canary's name is fixed per worker (``canary-<worker>``), so a JobSet of that name may already be there: a
user's, or a leftover of an earlier run. Only the JobSet this run created counts: it carries this run's workflow id
and run id (:data:`CREATED_ANNOTATION`, :data:`RUN_ANNOTATION`), a retried attempt finds and waits for it, and it is
deleted by its uid (DeleteOptions ``preconditions.uid``). Any other JobSet of that name is neither waited for (its
completion says nothing of this worker) nor deleted: the step fails ``CanaryNameTaken`` naming it.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.common.manifests import CREATED_ANNOTATION, RUN_ANNOTATION
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.runs import this_workflow
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_workflows import QUEUE_LABEL, EnrollmentStep
from tenantflow.models.results import Finding

CANARY_BUDGET_S = 120.0
CANARY_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
"""A small, pinned image that has ``sh`` and ``echo``: the canary only has to start, print a line and exit 0."""
CANARY_RESOURCES = {"cpu": "100m", "memory": "64Mi"}
"""Requests and limits of the canary's one container: a short check, not a benchmark (the runbook asks for a
short JobSet through ``user-queue`` and names no resources)."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""Kueue's label on the Workload it creates for a job, carrying the job's UID (the Workload's name is Kueue's)."""
Obj = dict[str, Any]


def canary_jobset(name: str, namespace: str, queue: str = "user-queue") -> Obj:
    """The canary: one JobSet through ``queue`` whose one Job runs one pod (one container, ``restartPolicy:
    Never``, ``backoffLimit: 0``; JobSet's default failure policy restarts nothing) that prints a line and exits.
    No ``ttlSecondsAfterFinished``: on a worker it would delete the JobSet before its status syncs back to the
    Hub, which then dispatches it again (kueue PR #14952)."""
    return {
        "apiVersion": KINDS["JobSet"].api_version,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "canary",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "canary",
                                            "image": CANARY_IMAGE,
                                            "command": ["sh", "-c", f"echo tenantflow canary {namespace}/{name}"],
                                            "resources": {
                                                "requests": dict(CANARY_RESOURCES),
                                                "limits": dict(CANARY_RESOURCES),
                                            },
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def _completed(status: Obj) -> bool:
    return any(x["type"] == "Completed" and x["status"] == "True" for x in status.get("conditions") or [])


def _cluster_of(hub: KubeObjects, job: Obj) -> str:
    """The worker the Hub's Kueue dispatched ``job`` to: ``status.clusterName`` of the Workload labelled with the
    job's UID (empty when the Hub does not say)."""
    meta = job["metadata"]
    for workload in hub.list("Workload", meta["namespace"], f"{JOB_UID_LABEL}={meta['uid']}"):
        cluster = (workload.get("status") or {}).get("clusterName")
        if cluster:
            return str(cluster)
    return ""


@defn(enrollment_steps.HUB_CANARY)
def canary(step: EnrollmentStep) -> Finding:
    """A short JobSet through ``user-queue`` on the Hub (:func:`canary_jobset`); it must be dispatched and
    complete."""
    c = step.contract
    hub = KubeObjects(c.hub)
    ns = c.workload_namespaces[0] if c.tenant_namespace not in c.workload_namespaces else c.tenant_namespace
    name = f"canary-{c.worker_name}"[:63]
    mark = {CREATED_ANNOTATION: this_workflow(), RUN_ANNOTATION: activity.info().workflow_run_id or ""}
    job = hub.get("JobSet", name, ns)
    if job is None:
        doc = canary_jobset(name, ns)
        doc["metadata"]["annotations"] = mark
        job = hub.create(doc)
    elif {k: (job["metadata"].get("annotations") or {}).get(k) for k in mark} != mark:
        raise fail(
            "CanaryNameTaken",
            f"a JobSet {ns}/{name} that this run did not create is in the canary's place "
            f"(annotations {CREATED_ANNOTATION}, {RUN_ANNOTATION} do not name this run); it was neither used nor "
            "deleted. If it is a leftover canary, delete it and retry the enrollment; otherwise rename it",
        )
    run = poll_until(
        lambda: dict((hub.get("JobSet", name, ns) or {}).get("status") or {}),
        _completed,
        every=growing(0.3),
        budget_s=CANARY_BUDGET_S,
        detail=dict,
    )
    if not run.done:
        raise fail("CanaryFailed", f"canary JobSet {ns}/{name} did not complete within {CANARY_BUDGET_S:.0f} s")
    where = _cluster_of(hub, job)
    hub.delete("JobSet", name, ns, uid=job["metadata"]["uid"])
    return Finding.passed("canary", f"canary {ns}/{name} completed" + (f" on {where}" if where else ""))
