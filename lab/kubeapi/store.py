"""The in-memory object store of one emulated cluster, and its subscription API.

Objects are dicts keyed by :class:`lab.kubeapi.objects.ObjectKey`. The store fills server metadata (uid,
resourceVersion from one global counter bumped on every write, generation bumped when anything outside
metadata/status changes, creationTimestamp, namespace), enforces AlreadyExists / NotFound / Conflict on a
stale resourceVersion / Invalid (schema validation) / namespace existence / Pod Security Admission on a pod's
creation (:mod:`lab.kubeapi.podsecurity`: 403 Forbidden under the namespace's enforced level), keeps status-subresource
semantics, finalizers (delete sets deletionTimestamp; the object goes when its finalizers are emptied),
namespace deletion (contents go too; in :mod:`lab.kubeapi.deletion`) and CRD registration (creating a CRD
serves its kind at once).
It is **thread-safe** (one re-entrant lock): the HTTP server calls it from its event loop, controllers from any.

Reading and writing (``subresource``: ``None`` or ``"status"``; every write takes ``dry_run``, ``field_validation``
(``"Strict"``, ``"Warn"``, ``"Ignore"``) and ``manager`` (:mod:`lab.kubeapi.managedfields`); all raise ApiError)::

    store.create(obj, namespace=None)                        -> stored copy
    store.get(group, resource, name, namespace=None)         -> copy
    store.list(group, resource, namespace=None, label_selector=None, field_selector=None)
    store.replace(group, resource, name, obj, namespace=None, subresource=None)
    store.patch(group, resource, name, body, content_type, namespace=None, subresource=None)
    store.apply(group, resource, name, config, namespace=None, manager=..., force=False) -> (object, created)
    store.delete(group, resource, name, namespace=None)      -> object (gone or marked)
    store.update_status(obj)                                 # replace(..., subresource="status")
    store.seed(objs)      # start-up objects, stored as given (status kept, no validation)
    store.snapshot()      # JSON-able dump, stable order, volatile metadata stripped
    store.dump()          # the whole state for a restart: server metadata and the version counter too
    Store.restore(dump)   # that state again: CRDs served, no watch history (an older version is 410 Gone)

``group`` is ``""`` for core; ``store.registry.for_object(obj)`` finds a manifest's type.

Subscriptions, for in-process controllers: ``store.subscribe(on_event, replay=True)`` returns the function
that unsubscribes (the contract is in :mod:`lab.kubeapi.events`).
"""

from __future__ import annotations

import builtins
import secrets
import uuid
from collections.abc import Iterable
from typing import Any

from tenantflow.lab.kubeapi import applying, errors, podsecurity
from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.deletion import Deletion
from tenantflow.lab.kubeapi.events import EventCallback
from tenantflow.lab.kubeapi.managedfields import LAB_MANAGER, Record, Writer, updates
from tenantflow.lab.kubeapi.objects import (
    CRD_KEY,
    NAMESPACE_KEY,
    VOLATILE_METADATA,
    Obj,
    ObjectKey,
    apply_defaults,
    content,
    custom_defaults,
    now,
)
from tenantflow.lab.kubeapi.patching import apply_patch
from tenantflow.lab.kubeapi.registry import ResourceType, resource_type_from_crd
from tenantflow.lab.kubeapi.validation import enforce

__all__ = ["EventCallback", "Obj", "ObjectKey", "Store", "now"]
POD_KEY = ("", "pods")


class Store(Deletion):
    """All objects of one cluster. See the module docstring for the contract."""

    def seed(self, objs: Iterable[Obj]) -> None:
        """Store start-up objects as given (status kept, no validation); namespaces first."""
        for obj in sorted(objs, key=lambda o: o.get("kind") != "Namespace"):
            rt = self.registry.for_object(obj)
            self._create(rt, clone(obj), obj.get("metadata", {}).get("namespace"), validate=False, keep_status=True)

    def create(
        self,
        obj: Obj,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
        manager: str = LAB_MANAGER,
    ) -> Obj:
        with self._lock:
            rt = self.registry.for_object(obj)
        return self._create(
            rt,
            clone(obj),
            namespace,
            dry_run=dry_run,
            field_validation=field_validation,
            warnings=warnings,
            record=updates(Writer(manager), rt.status_subresource),
        )

    def _create(
        self,
        rt: ResourceType,
        obj: Obj,
        namespace: str | None,
        *,
        validate: bool = True,
        keep_status: bool = False,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
        record: Record | None = None,
    ) -> Obj:
        meta = obj.setdefault("metadata", {})
        if namespace and meta.get("namespace") and meta["namespace"] != namespace and rt.namespaced:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
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
        with self._lock:
            key = ObjectKey(rt.group, rt.plural, ns, meta["name"])
            self._check_namespace(rt, ns)
            if key in self._objects:
                raise errors.already_exists(rt.plural, rt.group, key.name)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
            meta["resourceVersion"] = str(self._rv + 1)
            if validate:
                enforce(rt, obj, field_validation, warnings)
            if validate and rt.key == POD_KEY:
                labels = self._objects[ObjectKey("", "namespaces", "", ns)]["metadata"].get("labels") or {}
                podsecurity.admit(obj, labels, warnings)
            (record or updates(Writer(LAB_MANAGER), rt.status_subresource))(None, obj)
            if rt.key == CRD_KEY:
                resource_type_from_crd(obj)
            if dry_run:
                return obj
            self._bump()
            self._objects[key] = obj
            if rt.key == CRD_KEY:
                self._register_crd(obj)
            self._events.emit("ADDED", key, obj, self._rv)
            result = clone(obj)
        self._events.drain()
        return result

    def replace(
        self,
        group: str,
        resource: str,
        name: str,
        obj: Obj,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
        manager: str = LAB_MANAGER,
    ) -> Obj:
        """PUT: full replacement; 409 Conflict when ``metadata.resourceVersion`` is stale."""
        with self._lock:
            rt = self._type(group, resource)
            key = self._key(rt, name, namespace)
            current = self._existing(rt, key)
            new = clone(obj)
            sent_rv = (new.get("metadata") or {}).get("resourceVersion")
            if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            record = updates(Writer(manager, "Update", subresource or ""), rt.status_subresource)
            result = self._update(rt, key, current, new, subresource, dry_run, field_validation, warnings, record)
        self._events.drain()
        return result

    def update_status(self, obj: Obj) -> Obj:
        """Write ``obj['status']`` through the status subresource (for controllers)."""
        with self._lock:
            rt = self.registry.for_object(obj)
        meta = obj["metadata"]
        return self.replace(
            rt.group,
            rt.plural,
            meta["name"],
            obj,
            meta.get("namespace"),
            subresource="status" if rt.status_subresource else None,
        )

    def patch(
        self,
        group: str,
        resource: str,
        name: str,
        body: Any,
        content_type: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
        manager: str = LAB_MANAGER,
    ) -> Obj:
        """PATCH with a merge, strategic-merge or JSON patch body (see :mod:`lab.kubeapi.patching`)."""
        with self._lock:
            rt = self._type(group, resource)
            key = self._key(rt, name, namespace)
            current = self._existing(rt, key)
            new = apply_patch(content_type, current, body)
            if not isinstance(new, dict):
                raise errors.bad_request("patch result is not an object")
            new_rv = (new.get("metadata") or {}).get("resourceVersion")
            if new_rv and new_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            record = updates(Writer(manager, "Update", subresource or ""), rt.status_subresource)
            result = self._update(rt, key, current, new, subresource, dry_run, field_validation, warnings, record)
        self._events.drain()
        return result

    def apply(
        self,
        group: str,
        resource: str,
        name: str,
        config: Any,
        namespace: str | None = None,
        *,
        manager: str,
        force: bool = False,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
    ) -> tuple[Obj, bool]:
        """Server-side apply of ``config`` (see :mod:`lab.kubeapi.applying`); True when it created the object."""
        opts: dict[str, Any] = {"dry_run": dry_run, "field_validation": field_validation, "warnings": warnings}
        with self._lock:
            rt = self._type(group, resource)
            key = self._key(rt, name, namespace)
            current = self._objects.get(key)
            plan = applying.plan(rt, name, current, config, manager, force)
            if current is not None:
                result = self._update(rt, key, current, plan.obj, None, record=plan.record, **opts)
        if current is None:
            return self._create(rt, plan.obj, namespace, record=plan.record, **opts), True
        self._events.drain()
        return result, False

    def _update(
        self,
        rt: ResourceType,
        key: ObjectKey,
        current: Obj,
        new: Obj,
        subresource: str | None,
        dry_run: bool,
        field_validation: str,
        warnings: builtins.list[str] | None,
        record: Record,
    ) -> Obj:
        meta = new.setdefault("metadata", {})
        if meta.get("name", key.name) != key.name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({key.name})"
            )
        if rt.namespaced and meta.get("namespace", key.namespace) != key.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        new.setdefault("apiVersion", current["apiVersion"])
        new.setdefault("kind", current["kind"])
        if subresource == "status":
            merged = clone(current)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        elif rt.status_subresource:
            if "status" in current:
                new["status"] = clone(current["status"])
            else:
                new.pop("status", None)
        meta = new["metadata"]
        old_meta = current["metadata"]
        for fixed in ("uid", "creationTimestamp", "namespace", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        meta["name"] = key.name
        meta["resourceVersion"] = old_meta["resourceVersion"]
        custom_defaults(rt, new)
        meta["generation"] = old_meta.get("generation", 1) + (content(new) != content(current))
        if rt.key == NAMESPACE_KEY:
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = key.name
        enforce(rt, new, field_validation, warnings)
        record(current, new)
        if rt.key == CRD_KEY:
            resource_type_from_crd(new)
        if new == current or dry_run:
            return clone(new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(key, new)
            return clone(new)
        meta["resourceVersion"] = self._bump()
        self._objects[key] = new
        if rt.key == CRD_KEY:
            self._register_crd(new)
        self._events.emit("MODIFIED", key, new, self._rv)
        return clone(new)

    def delete(
        self,
        group: str,
        resource: str,
        name: str,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        precondition_rv: str | None = None,
        precondition_uid: str | None = None,
    ) -> Obj:
        """Delete now, or mark with deletionTimestamp while finalizers remain; returns the object."""
        with self._lock:
            rt = self._type(group, resource)
            key = self._key(rt, name, namespace)
            current = self._existing(rt, key)
            meta = current["metadata"]
            etcd_key = "/".join(["/registry", *(part for part in (rt.group, rt.plural, *key[2:]) if part)])
            for what, wanted, actual in (
                ("UID", precondition_uid, meta["uid"]),
                ("ResourceVersion", precondition_rv, meta["resourceVersion"]),
            ):
                if wanted is not None and wanted != actual:
                    raise errors.precondition_failed(rt.plural, rt.group, name, etcd_key, what, wanted, actual)
            if dry_run:
                return clone(current)
            result = self._delete(key, current)
        self._events.drain()
        return result
