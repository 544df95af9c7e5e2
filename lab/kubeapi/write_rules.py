"""What kube-apiserver does to an object before a create or an update is stored.

:func:`prepare_create` settles the name (``generateName``) and namespace, drops the status of a custom
resource with a status subresource (unless seeding), strips server metadata a client sent and applies
the create defaults. :func:`prepare_update` refuses a name or namespace other than the URL's, keeps the
status-subresource semantics (a status write changes only ``status``; a main write keeps the stored
status), keeps the server metadata and bumps ``generation`` when anything outside metadata/status changed.
Both raise :class:`lab.kubeapi.errors.ApiError` with the apiserver's messages.
"""

from __future__ import annotations

import copy
import secrets

from tenantflow.lab.kubeapi import errors
from tenantflow.lab.kubeapi.objects import NAMESPACE_KEY, VOLATILE_METADATA, Obj, ObjectKey, apply_defaults, content
from tenantflow.lab.kubeapi.registry import ResourceType

NAMESPACE_MISMATCH = "the namespace of the provided object does not match the namespace sent on the request"
FIXED_METADATA = ("uid", "creationTimestamp", "namespace", "deletionTimestamp", "deletionGracePeriodSeconds")


def prepare_create(rt: ResourceType, obj: Obj, namespace: str | None, *, keep_status: bool) -> str:
    """Make ``obj`` (a private copy) what the apiserver would store, but for server metadata; its namespace."""
    meta = obj.setdefault("metadata", {})
    if namespace and meta.get("namespace") and meta["namespace"] != namespace and rt.namespaced:
        raise errors.bad_request(NAMESPACE_MISMATCH)
    ns = (namespace or meta.get("namespace") or "") if rt.namespaced else ""
    if rt.namespaced and not ns:
        raise errors.bad_request(f"{rt.plural} is namespaced: a namespace is required")
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise errors.invalid(
                rt.kind, rt.group, "", [("metadata.name", "Required value: name or generateName is required")]
            )
        meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
    if rt.namespaced:
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    if rt.custom and rt.status_subresource and not keep_status:
        obj.pop("status", None)
    for volatile in (*VOLATILE_METADATA, "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(volatile, None)
    apply_defaults(rt, obj)
    return ns


def prepare_update(rt: ResourceType, key: ObjectKey, current: Obj, new: Obj, subresource: str | None) -> Obj:
    """The object an update of ``current`` to ``new`` (a private copy) stores, before defaults and validation."""
    meta = new.setdefault("metadata", {})
    if meta.get("name", key.name) != key.name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({key.name})"
        )
    if rt.namespaced and meta.get("namespace", key.namespace) != key.namespace:
        raise errors.bad_request(NAMESPACE_MISMATCH)
    new.setdefault("apiVersion", current["apiVersion"])
    new.setdefault("kind", current["kind"])
    if subresource == "status":
        merged = copy.deepcopy(current)
        if "status" in new:
            merged["status"] = new["status"]
        else:
            merged.pop("status", None)
        new = merged
    elif rt.status_subresource:
        if "status" in current:
            new["status"] = copy.deepcopy(current["status"])
        else:
            new.pop("status", None)
    meta = new["metadata"]
    old_meta = current["metadata"]
    for fixed in FIXED_METADATA:
        if fixed in old_meta:
            meta[fixed] = old_meta[fixed]
        else:
            meta.pop(fixed, None)
    meta["name"] = key.name
    meta["resourceVersion"] = old_meta["resourceVersion"]
    meta["generation"] = old_meta.get("generation", 1) + (content(new) != content(current))
    if rt.key == NAMESPACE_KEY:
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = key.name
    return new
