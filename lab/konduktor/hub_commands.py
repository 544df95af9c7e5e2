"""The stand-in's Hub commands: ``cluster enroll``, ``cluster status``, ``cluster cordon``, ``cluster decommission``."""

from __future__ import annotations

import secrets

from tenantflow.lab.konduktor import blob
from tenantflow.lab.konduktor.rest import CommandError, Rest, path

TRAINY = "trainy.ai/v1alpha1"


def _enrollment(namespace: str, worker: str | None = None) -> str:
    return path(TRAINY, "bootstrapenrollments", worker, namespace)


def _worker_cluster(namespace: str, worker: str | None = None) -> str:
    return path(TRAINY, "workerclusters", worker, namespace)


def enroll(hub: Rest, worker: str, namespace: str) -> str:
    """Create (or re-key, while unredeemed) the one-shot BootstrapEnrollment; return the blob."""
    existing = hub.get(_enrollment(namespace, worker))
    used = ((existing or {}).get("status") or {}).get("usedAt")
    if used:
        raise CommandError(
            f"BootstrapEnrollment {namespace}/{worker} was redeemed at {used}; decommission the "
            "worker before enrolling it again"
        )
    key, public = blob.new_key()
    enrollment_id = secrets.token_hex(8)
    spec = {"workerName": worker, "publicKey": public, "enrollmentId": enrollment_id}
    if existing is None:
        hub.create(
            _enrollment(namespace),
            {
                "apiVersion": TRAINY,
                "kind": "BootstrapEnrollment",
                "metadata": {"name": worker, "namespace": namespace},
                "spec": spec,
            },
        )
    else:
        hub.merge(_enrollment(namespace, worker), {"spec": spec})
    claims = {"hub": hub.server, "namespace": namespace, "worker": worker, "enrollmentId": enrollment_id}
    return blob.encode(claims, key)


def status(hub: Rest, worker: str, namespace: str) -> list[str]:
    wc = hub.get(_worker_cluster(namespace, worker))
    if wc is None:
        raise CommandError(f"no WorkerCluster {namespace}/{worker} (not registered yet, or decommissioned)")
    meta, spec = wc["metadata"], wc.get("spec") or {}
    lines = [
        f"WorkerCluster {namespace}/{worker} generation={meta.get('generation', 1)} "
        f"cordoned={str(bool(spec.get('cordoned'))).lower()}",
        f"{'TYPE':<28} {'STATUS':<8} {'REASON':<20} {'OBSERVED':<8} MESSAGE",
    ]
    for cond in (wc.get("status") or {}).get("conditions") or []:
        lines.append(
            f"{cond['type']:<28} {cond['status']:<8} {cond.get('reason', ''):<20} "
            f"{cond.get('observedGeneration', 0)!s:<8} {cond.get('message', '')}"
        )
    return lines


def cordon(hub: Rest, worker: str, namespace: str, cordoned: bool) -> str:
    if hub.get(_worker_cluster(namespace, worker)) is None:
        raise CommandError(f"no WorkerCluster {namespace}/{worker}")
    hub.merge(_worker_cluster(namespace, worker), {"spec": {"cordoned": cordoned}})
    return f"workercluster {namespace}/{worker} {'cordoned' if cordoned else 'uncordoned'}"


def decommission(hub: Rest, worker: str, namespace: str) -> list[str]:
    """Remove the Hub enrollment: the WorkerCluster, then the BootstrapEnrollment."""
    return [
        f"{'deleted' if hub.delete(where) else 'absent'} {kind} {namespace}/{worker}"
        for kind, where in (
            ("workercluster", _worker_cluster(namespace, worker)),
            ("bootstrapenrollment", _enrollment(namespace, worker)),
        )
    ]
