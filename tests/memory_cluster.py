"""An in-memory cluster answering ``KubeObjects``' reads and writes, for the pure tests of ensure and undo."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.lab.kubeapi.patching import merge_patch


class MemoryCluster:
    """Objects by (kind, name, namespace), read and written as ``KubeObjects`` reads and writes them; a patch is
    applied with the lab apiserver's RFC 7386 merge patch."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {
            self.key(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")): obj for obj in objects
        }

    @staticmethod
    def key(kind: str, name: str, namespace: str | None) -> tuple[str, str, str]:
        return kind, name, namespace or ""

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        found = self.objects.get(self.key(kind, name, namespace))
        return copy.deepcopy(found) if found is not None else None

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` with a fresh ``metadata.uid`` (as the API server gives every object); the stored copy."""
        made = copy.deepcopy(obj)
        made["metadata"] = {**made["metadata"], "uid": str(uuid.uuid4())}
        self.objects[self.key(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))] = made
        return copy.deepcopy(made)

    def patch(self, kind: str, name: str, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        key = self.key(kind, name, namespace)
        self.objects[key] = merge_patch(self.objects[key], copy.deepcopy(body))
        return copy.deepcopy(self.objects[key])

    def delete(self, kind: str, name: str, namespace: str | None = None, uid: str | None = None) -> bool:
        """Delete; with ``uid`` only the object of that uid, else 409 Conflict as kube-apiserver's preconditions."""
        found = self.objects.get(self.key(kind, name, namespace))
        if found is not None and uid is not None and found["metadata"].get("uid") != uid:
            raise ApplicationError(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {found['metadata'].get('uid')}",
                type="Conflict",
                non_retryable=True,
            )
        return self.objects.pop(self.key(kind, name, namespace), None) is not None
