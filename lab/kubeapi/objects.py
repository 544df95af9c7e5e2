"""What every stored object of the Kubernetes emulator shares: its key, timestamps and server-side defaults.

Objects are dicts keyed by :class:`ObjectKey` ``(group, resource, namespace, name)`` where ``resource``
is the version-independent plural (``pods``, ``reservations``) and ``namespace`` is ``""`` for
cluster-scoped objects. :func:`apply_defaults` fills what kube-apiserver fills on create (namespace
labels and finalizer, pod phase, Secret type, a CRD's accepted names and conditions, a custom resource's schema
defaults); :func:`custom_defaults` is also applied on update.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

from tenantflow.lab.kubeapi.defaulting import canonical_resource_lists, normalize_quantities, schema_defaults
from tenantflow.lab.kubeapi.registry import ResourceType

Obj = dict[str, Any]
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACE_KEY = ("", "namespaces")
VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


class ObjectKey(NamedTuple):
    group: str
    resource: str
    namespace: str
    name: str


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def content(obj: Obj) -> Obj:
    """The object without metadata and status: what a change of bumps ``generation``."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def custom_defaults(rt: ResourceType, obj: Obj) -> None:
    """What the apiserver normalizes on create and update: a core type's ResourceList quantities in canonical
    form, a custom resource's schema defaults; Kueue objects also get canonical quantities."""
    canonical_resource_lists(rt.key, obj)
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    schema = rt.schemas.get(version) or rt.schemas.get(rt.storage_version) or {}
    if not rt.custom or not schema:
        return
    schema_defaults(schema, obj)
    if rt.group == "kueue.x-k8s.io" and "spec" in obj:
        obj["spec"] = normalize_quantities((schema.get("properties") or {}).get("spec") or {}, obj["spec"])


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    """Fill the fields kube-apiserver defaults on create."""
    custom_defaults(rt, obj)
    if rt.key == NAMESPACE_KEY:
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif rt.key == ("", "pods"):
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif rt.key == ("", "secrets") and not obj.get("type"):
        obj["type"] = "Opaque"
    elif rt.key == CRD_KEY:
        names = obj.get("spec", {}).get("names", {})
        obj["status"] = {
            "acceptedNames": names,
            "storedVersions": [v["name"] for v in obj.get("spec", {}).get("versions", []) if v.get("storage")],
            "conditions": [
                {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now()}
                for t, r, m in (
                    ("NamesAccepted", "NoConflicts", "no conflicts found"),
                    ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                )
            ],
        }
