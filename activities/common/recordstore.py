"""Writing and reading tenant and worker records (:mod:`models.records`) as versioned Secrets, as Helm stores releases.

:func:`store` (behind the activities ``records.tenant`` and ``records.worker``) writes the next version of a record
in the platform namespace (``TENANTFLOW_RECORDS_NAMESPACE``, created when missing), finding
the versions by name (v1, v2, ... up to the first missing: versions are never deleted). It
is idempotent on retry: a version written by the same Temporal run id is found
by its annotation and returned, so a retried attempt never writes a second one; a
run that leaves the record as it was (same contract, same status: a re-run) keeps
the current version, so a re-run writes nothing.
Two writers racing for one version number meet a 409 and the loser takes the next.
:func:`read_latest` and :func:`list_records` are what the worker reads for the CLI and the HTTP API (the read-only
``TenantRecords`` and ``WorkerClusterRecords``), for the lifecycle and for drift, with the worker's credentials;
:func:`read_versions` is how the storage step learns which directories the tenant made.
"""

from __future__ import annotations

import base64
from typing import TypeVar

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import TRANSIENT, fail
from tenantflow.activities.common.kubeobjects import KubeObjects, Manifest
from tenantflow.activities.common.manifests import MANAGED_BY, MANAGER
from tenantflow.activities.common.settings import settings
from tenantflow.models.records import (
    DATA_KEY,
    RECORD_LABEL,
    RUN_ID_ANNOTATION,
    SECRET_TYPE,
    STATUS_LABEL,
    VERSION_LABEL,
    RecordKey,
    RecordKind,
    StoredRecord,
    TenantRecord,
    WorkerClusterRecord,
    decode_payload,
    encode_payload,
)
from tenantflow.models.targets import KubeTarget

M = TypeVar("M", bound=BaseModel)
CREATE_ATTEMPTS = 5
"""Versions tried before giving up when other writers keep taking the next number."""


def _version(secret: Manifest) -> int:
    labels = secret["metadata"].get("labels") or {}
    try:
        return int(labels.get(VERSION_LABEL, "0"))
    except ValueError:
        return 0


def _versions(key: RecordKey, namespace: str) -> list[Manifest]:
    """Every stored version of ``key``, oldest first, read by name from v1 up to the first missing one: the
    worker's RBAC (deploy/base/rbac.yaml) lets it get and create Secrets, never list them."""
    objects = KubeObjects(key.target)
    found: list[Manifest] = []
    while (secret := objects.get("Secret", key.secret_name(len(found) + 1), namespace)) is not None:
        if secret.get("type") != SECRET_TYPE:
            raise fail(
                "Conflict",
                f"{namespace}/{secret['metadata']['name']} is not a tenantflow record "
                f"(type {secret.get('type')!r}, expected {SECRET_TYPE})",
            )
        found.append(secret)
    return found


def _payload(secret: Manifest) -> bytes:
    return decode_payload(base64.b64decode(secret["data"][DATA_KEY]).decode())


def _stored(
    key: RecordKey, secret: Manifest, record: TenantRecord | WorkerClusterRecord, created: bool
) -> StoredRecord:
    meta = secret["metadata"]
    return StoredRecord(
        kind=key.kind,
        name=meta["name"],
        namespace=meta["namespace"],
        version=_version(secret),
        status=record.status,
        run=record.run,
        created=created,
    )


def _same_state(secret: Manifest, record: TenantRecord | WorkerClusterRecord) -> bool:
    """True when the stored version already says what ``record`` says: same contract, same status."""
    stored = type(record).model_validate_json(_payload(secret))
    return stored.contract == record.contract and stored.status is record.status


def _ensure_namespace(objects: KubeObjects, namespace: str) -> None:
    if objects.get("Namespace", namespace) is not None:
        return
    try:
        objects.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {MANAGED_BY: MANAGER}}}
        )
    except ApplicationError as err:
        if err.type != "Conflict":
            raise


def _secret(key: RecordKey, namespace: str, version: int, record: TenantRecord | WorkerClusterRecord) -> Manifest:
    encoded = base64.b64encode(encode_payload(record).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRET_TYPE,
        "immutable": True,
        "metadata": {
            "name": key.secret_name(version),
            "namespace": namespace,
            "labels": {
                **key.labels,
                VERSION_LABEL: str(version),
                STATUS_LABEL: record.status.value,
                MANAGED_BY: MANAGER,
            },
            "annotations": {RUN_ID_ANNOTATION: record.run.run_id},
        },
        "data": {DATA_KEY: encoded},
    }


def store(record: TenantRecord | WorkerClusterRecord, namespace: str) -> StoredRecord:
    """Write the next version of ``record``'s record, or return the one its run already wrote (or that already
    records the same contract and status)."""
    key = RecordKey.of(record)
    objects = KubeObjects(key.target)
    _ensure_namespace(objects, namespace)
    for _ in range(CREATE_ATTEMPTS):
        versions = _versions(key, namespace)
        mine = [
            s for s in versions if (s["metadata"].get("annotations") or {}).get(RUN_ID_ANNOTATION) == record.run.run_id
        ]
        if mine:
            return _stored(key, mine[-1], record, created=False)
        if versions and _same_state(versions[-1], record):
            return _stored(key, versions[-1], type(record).model_validate_json(_payload(versions[-1])), created=False)
        version = _version(versions[-1]) + 1 if versions else 1
        body = _secret(key, namespace, version, record)
        try:
            created = objects.create(body)
        except ApplicationError as err:
            if err.type == "Conflict":
                continue
            raise
        activity.logger.info("stored %s as %s/%s", key.stem, namespace, body["metadata"]["name"])
        return _stored(key, created, record, created=True)
    raise ApplicationError(f"{key.stem}: other writers took {CREATE_ATTEMPTS} versions in a row", type=TRANSIENT)


def read_latest(key: RecordKey, model: type[M], namespace: str | None = None) -> M | None:
    """The highest version of ``key``'s record, decoded as ``model``; None when the cluster holds none."""
    namespace = namespace or settings().records_namespace
    versions = _versions(key, namespace)
    return model.model_validate_json(_payload(versions[-1])) if versions else None


def read_versions(key: RecordKey, model: type[M], namespace: str | None = None) -> list[M]:
    """Every version of ``key``'s record, oldest first, decoded as ``model``; empty when the cluster holds none."""
    return [model.model_validate_json(_payload(v)) for v in _versions(key, namespace or settings().records_namespace)]


def list_records(
    target: KubeTarget, kind: RecordKind, namespace: str | None = None
) -> list[tuple[int, TenantRecord | WorkerClusterRecord]]:
    """The current (highest) version of every record of ``kind`` in the cluster, with its version number."""
    namespace = namespace or settings().records_namespace
    found = KubeObjects(target).list("Secret", namespace, f"{RECORD_LABEL}={kind.value}")
    model: type[TenantRecord | WorkerClusterRecord] = TenantRecord if kind is RecordKind.tenant else WorkerClusterRecord
    latest: dict[str, Manifest] = {}
    for secret in found:
        if secret.get("type") != SECRET_TYPE or _version(secret) == 0:
            continue
        stem = str(secret["metadata"]["name"]).rpartition(".v")[0]
        if stem not in latest or _version(secret) > _version(latest[stem]):
            latest[stem] = secret
    return [(_version(s), model.model_validate_json(_payload(s))) for _, s in sorted(latest.items())]
