"""Tenant directories on Weka, made on a csi-wekafs mount by a short-lived Kubernetes Job (Weka's REST API has
no mkdir).

For one filesystem the helper creates, in the platform namespace ``WEKA_HELPER_NAMESPACE`` (the Job runs as
root to ``chown``, which pod-security ``restricted`` forbids, and mounts a whole filesystem with its owner's
login, which the tenant's admins, ``edit`` in the tenant namespace, must not read; the platform namespace must allow
``baseline``), an API Secret in csi-wekafs's format (the
login of the filesystem's owner: the tenant org admin, or the platform user for the shared filesystems), a
static PersistentVolume ``weka/v2/<filesystem>`` with a PVC bound to it (csi-wekafs
``examples/static_volume/static_filesystem``), and a Job that mounts it at ``/weka`` and runs ``mkdir -p``,
``chown uid:gid`` and ``chmod mode`` for each directory (:func:`models.weka_mount.directory_command`), first
printing the owner of each directory that already existed; or, for a purge, ``rm -rf`` of each directory
that exists (:func:`models.weka_mount.removal_command`), printing the ones it removed. It waits for the Job
(heartbeating, :func:`activities.common.polling.poll_until`), reads those owners (or what it removed) from the
log of the Job's pod (the pod the Job controller labels ``job-name=<job>`` with the Job as its owner, Kubernetes
documentation "Jobs"; its log through :func:`activities.common.kubeclient.pod_log`), then removes all four
objects (they carry tenantflow's labels; a same-named object without them is refused, never touched; the pod goes
with its Job, background propagation).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.kubeensure import is_ours
from tenantflow.activities.common.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.common.manifests import owner_labels
from tenantflow.activities.common.polling import Backoff, poll_until
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.weka_client import Credentials
from tenantflow.models.tenant import TenantContract
from tenantflow.models.weka_mount import (
    DRIVER,
    MOUNT_PATH,
    DirectorySpec,
    Owner,
    directory_command,
    filesystem_handle,
    parse_owners,
    parse_removed,
    removal_command,
)

HELPER_LABEL = "tenantflow.io/helper"
HELPER = "weka-directories"
JOB_BUDGET_S = 120.0
"""Per Job (one per filesystem, two at most), so a step stays inside its 5-minute start-to-close timeout."""
REMOVE_TRIES = 4
REMOVE_BACKOFF_S = 0.2
"""A helper object's removal is tried up to four times, waiting 0.2, 0.4 and 0.8 s between tries."""
CONTAINER = "mkdir"
JOB_NAME_LABEL = "job-name"
"""Set by the Job controller on the Job's pods (all versions; ``batch.kubernetes.io/job-name`` too from 1.27)."""


def api_secret_data(credentials: Credentials) -> dict[str, str]:
    """The csi-wekafs API Secret's ``data`` (base64): username, password, organization, endpoints, scheme."""
    url = urlsplit(settings().weka_url)
    port = url.port or (443 if url.scheme == "https" else 80)
    values = {
        "username": credentials.username,
        "password": credentials.password.get_secret_value(),
        "organization": credentials.org,
        "endpoints": f"{url.hostname}:{port}",
        "scheme": url.scheme or "https",
    }
    return {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}


def helper_namespace(objs: KubeObjects) -> str:
    """The platform namespace of the helper; it must exist (a platform prerequisite, like slurm-control)."""
    ns = settings().weka_helper_namespace
    if objs.get("Namespace", ns) is None:
        raise fail(
            "NotFound",
            f"namespace {ns} (WEKA_HELPER_NAMESPACE) is missing: create it with pod-security "
            "baseline; the Weka directory Job runs there as root to chown the tenant's directories",
        )
    return ns


def helper_name(contract: TenantContract, filesystem: str) -> str:
    digest = hashlib.sha256(f"{contract.namespace}/{filesystem}".encode()).hexdigest()[:10]
    return f"tenantflow-weka-dirs-{digest}"


def helper_pod_spec(claim: str, command: list[str]) -> dict[str, Any]:
    """The directory Job's pod: the helper image running ``command`` as root (``chown``) on the PVC ``claim``."""
    return {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": CONTAINER,
                "image": settings().weka_helper_image,
                "command": command,
                "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False},
                "volumeMounts": [{"name": "weka", "mountPath": MOUNT_PATH}],
            }
        ],
        "volumes": [{"name": "weka", "persistentVolumeClaim": {"claimName": claim}}],
    }


def _manifests(
    contract: TenantContract, ns: str, filesystem: str, credentials: Credentials, command: list[str]
) -> list[dict[str, Any]]:
    name = helper_name(contract, filesystem)
    meta = {"name": name, "labels": {**owner_labels(contract.slug), HELPER_LABEL: HELPER}}
    ref = {"name": name, "namespace": ns}
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {**meta, "namespace": ns},
            "data": api_secret_data(credentials),
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": meta,
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "volumeMode": "Filesystem",
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": ns, "name": name},
                "csi": {
                    "driver": DRIVER,
                    "volumeHandle": filesystem_handle(filesystem),
                    "nodeStageSecretRef": ref,
                    "nodePublishSecretRef": ref,
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {**meta, "namespace": ns},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": name,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {**meta, "namespace": ns},
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": int(JOB_BUDGET_S),
                "ttlSecondsAfterFinished": 600,
                "template": {
                    "metadata": {"labels": {HELPER_LABEL: HELPER}},
                    "spec": helper_pod_spec(name, command),
                },
            },
        },
    ]


def _delete_once(objs: KubeObjects, body: dict[str, Any], slug: str) -> bool:
    """Delete a helper object while it is ours (a Job with its pods); refuse to touch a foreign one. True once it
    is gone or its deletion accepted."""
    kind, meta = body["kind"], body["metadata"]
    existing = objs.get(kind, meta["name"], meta.get("namespace"))
    if existing is None:
        return True
    labels = (existing.get("metadata") or {}).get("labels") or {}
    if not is_ours(existing, slug) or labels.get(HELPER_LABEL) != HELPER:
        raise fail(
            "Conflict", f"{kind} {meta['name']} exists and is not tenantflow's directory helper; remove or rename it"
        )
    path = KINDS[kind].path(meta.get("namespace"), meta["name"])
    try:
        kubeclient.request(
            objs.target,
            "DELETE",
            path,
            {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
        )
    except ApplicationError as err:
        if err.type != "NotFound":
            raise
    return True


def _remove(objs: KubeObjects, body: dict[str, Any], slug: str) -> None:
    """Delete a helper object (:func:`_delete_once`), tried again in place when the API server's answer is
    transient or lost: a DELETE is idempotent (RFC 9110, section 9.2.2) and each try reads the object first, so a
    deletion that did happen is seen as done. Without this, a lost answer to the cleanup after the Job completed
    failed the whole attempt, and the next attempt ran the Job again."""
    poll_until(
        lambda: _delete_once(objs, body, slug),
        bool,
        every=Backoff(REMOVE_BACKOFF_S, 2.0),
        attempts=REMOVE_TRIES,
        tolerate=transient,
    )


@contextmanager
def _helper_objects(objs: KubeObjects, bodies: list[dict[str, Any]], slug: str) -> Iterator[None]:
    for body in reversed(bodies):
        _remove(objs, body, slug)
    try:
        for body in bodies:
            objs.create(body)
        yield
    finally:
        for body in reversed(bodies):
            _remove(objs, body, slug)


def _job_state(job: dict[str, Any] | None) -> tuple[str, str]:
    """("Complete" | "Failed" | "", message) from the Job's conditions."""
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return str(cond["type"]), str(cond.get("message") or cond.get("reason") or "")
    return "", ""


def _job_log(objs: KubeObjects, job: dict[str, Any] | None, ns: str, name: str) -> str:
    """What the Job's container logged (its succeeded pod)."""
    uid = ((job or {}).get("metadata") or {}).get("uid")
    pods = [
        p
        for p in objs.list("Pod", ns, f"{JOB_NAME_LABEL}={name}")
        if any(ref.get("uid") == uid for ref in (p.get("metadata") or {}).get("ownerReferences") or [])
        and (p.get("status") or {}).get("phase") == "Succeeded"
    ]
    if not pods:
        raise fail("NotFound", f"the Job {ns}/{name} completed but its pod is gone; its log is lost")
    return kubeclient.pod_log(objs.target, ns, str(pods[0]["metadata"]["name"]), CONTAINER)


def _run_job(contract: TenantContract, filesystem: str, credentials: Credentials, command: list[str], what: str) -> str:
    """Run the helper Job with ``command`` on a mount of ``filesystem`` and wait for it; its log, or an error
    saying ``what`` it was doing when it failed."""
    objs = KubeObjects(contract.cluster)
    ns = helper_namespace(objs)
    bodies = _manifests(contract, ns, filesystem, credentials, command)
    name = bodies[0]["metadata"]["name"]
    with _helper_objects(objs, bodies, contract.slug):
        polled = poll_until(
            lambda: objs.get("Job", name, ns),
            lambda job: bool(_job_state(job)[0]),
            every=Backoff(settings().poll_interval_s, 1.5, 5.0),
            budget_s=JOB_BUDGET_S,
            detail=lambda job: f"weka directory Job {ns}/{name}: {_job_state(job)[0] or 'running'}",
            tolerate=transient,
        )
        state, message = _job_state(polled.value)
        if state == "Complete":
            return _job_log(objs, polled.value, ns, name)
    raise fail(
        "DirectoryJobFailed",
        f"the Job {ns}/{name} {what} on Weka filesystem {filesystem} "
        f"{'failed: ' + message if state else f'did not finish within {JOB_BUDGET_S:.0f} s'}",
    )


def make_directories(
    contract: TenantContract, filesystem: str, credentials: Credentials, specs: list[DirectorySpec]
) -> dict[str, Owner]:
    """Run the directory Job for ``specs`` on ``filesystem`` and wait for it; raise when it fails. The owner each
    directory had before, by path, for those that already existed."""
    if not specs:
        return {}
    paths = ", ".join(s.path for s in specs)
    return parse_owners(_run_job(contract, filesystem, credentials, directory_command(specs), f"making {paths}"))


def remove_directories(
    contract: TenantContract, filesystem: str, credentials: Credentials, paths: list[str]
) -> set[str]:
    """Run the removal Job for ``paths`` on ``filesystem`` (``rm -rf`` of each that exists) and wait for it; raise
    when it fails. The paths that existed and were removed."""
    if not paths:
        return set()
    shown = ", ".join(paths)
    return parse_removed(_run_job(contract, filesystem, credentials, removal_command(paths), f"removing {shown}"))
