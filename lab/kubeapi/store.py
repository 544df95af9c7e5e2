"""The in-memory object store of one emulated cluster, and its subscription API.

Objects are dicts keyed by :class:`lab.kubeapi.objects.ObjectKey`. The store fills server metadata (uid,
resourceVersion from one global counter bumped on every write, generation bumped when anything outside
metadata/status changes, creationTimestamp, namespace), enforces AlreadyExists / NotFound / Conflict on a
stale resourceVersion / Invalid (schema validation) / namespace existence, keeps status-subresource
semantics, finalizers (delete sets deletionTimestamp; the object goes when its finalizers are emptied),
namespace deletion (contents go too) and CRD registration (creating a CRD serves its kind at once).
It is **thread-safe** (one re-entrant lock): the HTTP server calls it from its event loop, controllers
from any thread or loop.

Reading and writing (``subresource`` is ``None`` or ``"status"``; every write takes ``dry_run`` and
``field_validation`` = ``"Strict"`` (default), ``"Warn"`` or ``"Ignore"``; all raise ``ApiError``)::

    store.create(obj, namespace=None)                        -> stored copy
    store.get(group, resource, name, namespace=None)         -> copy
    store.list(group, resource, namespace=None, label_selector=None, field_selector=None)
    store.replace(group, resource, name, obj, namespace=None, subresource=None)
    store.patch(group, resource, name, body, content_type, namespace=None, subresource=None)
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
import copy
import secrets
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from tenantflow.lab.kubeapi import errors, selectors
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.events import EventCallback, EventLog
from tenantflow.lab.kubeapi.objects import (
    CRD_KEY,
    NAMESPACE_KEY,
    VOLATILE_METADATA,
    Obj,
    ObjectKey,
    apply_defaults,
    content,
    now,
)
from tenantflow.lab.kubeapi.patching import apply_patch
from tenantflow.lab.kubeapi.registry import Registry, ResourceType, resource_type_from_crd
from tenantflow.lab.kubeapi.validation import enforce

__all__ = ["EventCallback", "Obj", "ObjectKey", "Store", "now"]


class Store:
    """All objects of one cluster. See the module docstring for the contract."""

    def __init__(self, *, history: int = 5000) -> None:
        self.registry = Registry()
        self._objects: dict[ObjectKey, Obj] = {}
        self._rv = 1
        self._lock = threading.RLock()
        self._events = EventLog(self._lock, history)

    # ---------------------------------------------------------------- subscriptions
    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def subscribe(
        self, callback: EventCallback, *, replay: bool = False, since: int | None = None
    ) -> Callable[[], None]:
        """Register ``callback``; returns a function that unregisters it."""
        with self._lock:
            return self._events.subscribe(callback, self._rv, self._current, replay=replay, since=since)

    def _current(self) -> Iterable[tuple[ObjectKey, Obj]]:
        return ((key, copy.deepcopy(self._objects[key])) for key in sorted(self._objects))

    # ---------------------------------------------------------------- helpers
    def _type(self, group: str, resource: str) -> ResourceType:
        rt = self.registry.get(group, resource)
        if rt is None:
            raise ApiError(
                404, "NotFound", "the server could not find the requested resource", {"group": group, "kind": resource}
            )
        return rt

    def _key(self, rt: ResourceType, name: str, namespace: str | None) -> ObjectKey:
        if rt.namespaced and not namespace:
            raise errors.bad_request(f"{rt.plural} is namespaced: a namespace is required")
        return ObjectKey(rt.group, rt.plural, namespace or "" if rt.namespaced else "", name)

    def _existing(self, rt: ResourceType, key: ObjectKey) -> Obj:
        obj = self._objects.get(key)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, key.name)
        return obj

    def _bump(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _check_namespace(self, rt: ResourceType, namespace: str) -> None:
        if not rt.namespaced:
            return
        ns = self._objects.get(ObjectKey("", "namespaces", "", namespace))
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f'{rt.plural} "{namespace}" is forbidden: unable to create new content '
                f"in namespace {namespace} because it is being terminated"
            )

    # ---------------------------------------------------------------- reads
    def get(self, group: str, resource: str, name: str, namespace: str | None = None) -> Obj:
        with self._lock:
            rt = self._type(group, resource)
            return copy.deepcopy(self._existing(rt, self._key(rt, name, namespace)))

    def list(
        self,
        group: str,
        resource: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[Obj]:
        """Matching objects in key order (``namespace=None`` means all namespaces)."""
        return self.list_with_version(group, resource, namespace, label_selector, field_selector)[0]

    def list_with_version(
        self,
        group: str,
        resource: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[Obj], int]:
        labels = selectors.label_selector(label_selector)
        fields = selectors.field_selector(field_selector)
        with self._lock:
            rt = self._type(group, resource)
            items = [
                copy.deepcopy(obj)
                for key, obj in sorted(self._objects.items())
                if key[:2] == rt.key and (not namespace or key.namespace == namespace) and labels(obj) and fields(obj)
            ]
            return items, self._rv

    # ---------------------------------------------------------------- writes
    def seed(self, objs: Iterable[Obj]) -> None:
        """Store start-up objects as given (status kept, no validation); namespaces first."""
        for obj in sorted(objs, key=lambda o: o.get("kind") != "Namespace"):
            rt = self.registry.for_object(obj)
            self._create(
                rt, copy.deepcopy(obj), obj.get("metadata", {}).get("namespace"), validate=False, keep_status=True
            )

    def create(
        self,
        obj: Obj,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: builtins.list[str] | None = None,
    ) -> Obj:
        with self._lock:
            rt = self.registry.for_object(obj)
        return self._create(
            rt, copy.deepcopy(obj), namespace, dry_run=dry_run, field_validation=field_validation, warnings=warnings
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
            if rt.key == CRD_KEY:
                resource_type_from_crd(obj)
            if dry_run:
                return obj
            self._bump()
            self._objects[key] = obj
            if rt.key == CRD_KEY:
                self._register_crd(obj)
            self._events.emit("ADDED", key, obj, self._rv)
            result = copy.deepcopy(obj)
        self._events.drain()
        return result

    def _register_crd(self, crd: Obj) -> None:
        rt = resource_type_from_crd(crd)
        self.registry.add(rt)

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
    ) -> Obj:
        """PUT: full replacement; 409 Conflict when ``metadata.resourceVersion`` is stale."""
        with self._lock:
            rt = self._type(group, resource)
            key = self._key(rt, name, namespace)
            current = self._existing(rt, key)
            new = copy.deepcopy(obj)
            sent_rv = (new.get("metadata") or {}).get("resourceVersion")
            if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            result = self._update(rt, key, current, new, subresource, dry_run, field_validation, warnings)
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
            result = self._update(rt, key, current, new, subresource, dry_run, field_validation, warnings)
        self._events.drain()
        return result

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
        for fixed in ("uid", "creationTimestamp", "namespace", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        meta["name"] = key.name
        meta["resourceVersion"] = old_meta["resourceVersion"]
        meta["generation"] = old_meta.get("generation", 1) + (content(new) != content(current))
        if rt.key == NAMESPACE_KEY:
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = key.name
        enforce(rt, new, field_validation, warnings)
        if rt.key == CRD_KEY:
            resource_type_from_crd(new)
        if new == current or dry_run:
            return copy.deepcopy(new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(key, new)
            return copy.deepcopy(new)
        meta["resourceVersion"] = self._bump()
        self._objects[key] = new
        if rt.key == CRD_KEY:
            self._register_crd(new)
        self._events.emit("MODIFIED", key, new, self._rv)
        return copy.deepcopy(new)

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
            if precondition_rv and precondition_rv != meta["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            if precondition_uid and precondition_uid != meta["uid"]:
                raise errors.conflict(rt.plural, rt.group, name)
            if dry_run:
                return copy.deepcopy(current)
            result = self._delete(key, current)
        self._events.drain()
        return result

    def _delete(self, key: ObjectKey, current: Obj) -> Obj:
        meta = current["metadata"]
        if key[:2] == NAMESPACE_KEY:
            return self._delete_namespace(key, current)
        if meta.get("finalizers"):
            if not meta.get("deletionTimestamp"):
                marked = copy.deepcopy(current)
                marked["metadata"].update(
                    deletionTimestamp=now(), deletionGracePeriodSeconds=0, resourceVersion=self._bump()
                )
                self._objects[key] = marked
                self._events.emit("MODIFIED", key, marked, self._rv)
                return copy.deepcopy(marked)
            return copy.deepcopy(current)
        self._remove(key, current)
        return copy.deepcopy(current)

    def _remove(self, key: ObjectKey, last: Obj) -> None:
        gone = copy.deepcopy(last)
        gone["metadata"]["resourceVersion"] = self._bump()
        del self._objects[key]
        self._events.emit("DELETED", key, gone, self._rv)
        if key[:2] == CRD_KEY:
            rt = resource_type_from_crd(last)
            for child in [k for k in self._objects if k[:2] == rt.key]:
                self._remove(child, self._objects[child])
            self.registry.remove(rt.key)
        if key.namespace:
            ns_key = ObjectKey("", "namespaces", "", key.namespace)
            ns = self._objects.get(ns_key)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._finish_namespace(ns_key, ns)

    def _delete_namespace(self, key: ObjectKey, current: Obj) -> Obj:
        if not current["metadata"].get("deletionTimestamp"):
            marked = copy.deepcopy(current)
            marked["metadata"].update(
                deletionTimestamp=now(), deletionGracePeriodSeconds=0, resourceVersion=self._bump()
            )
            marked.setdefault("status", {})["phase"] = "Terminating"
            self._objects[key] = marked
            self._events.emit("MODIFIED", key, marked, self._rv)
            for child in [k for k in self._objects if k.namespace == key.name]:
                if child in self._objects:
                    self._delete(child, self._objects[child])
            current = marked
        self._finish_namespace(key, current)
        return copy.deepcopy(current)

    def _finish_namespace(self, key: ObjectKey, ns: Obj) -> None:
        if key not in self._objects:
            return
        if any(k.namespace == key.name for k in self._objects) or ns["metadata"].get("finalizers"):
            return
        self._remove(key, ns)

    # ---------------------------------------------------------------- dumps
    def snapshot(self, *, include_volatile: bool = False) -> dict[str, Any]:
        """Every object, sorted by key; uid/resourceVersion/timestamps stripped unless asked."""
        with self._lock:
            objects = []
            for key in sorted(self._objects):
                obj = copy.deepcopy(self._objects[key])
                if not include_volatile:
                    for field_name in VOLATILE_METADATA:
                        obj["metadata"].pop(field_name, None)
                objects.append(
                    {
                        "group": key.group,
                        "resource": key.resource,
                        "namespace": key.namespace,
                        "name": key.name,
                        "object": obj,
                    }
                )
            return {"objects": objects}

    def dump(self) -> dict[str, Any]:
        """The whole state for :meth:`restore`: every object with its server metadata, and the version counter."""
        with self._lock:
            return {"resource_version": self._rv, **self.snapshot(include_volatile=True)}

    @classmethod
    def restore(cls, dump: dict[str, Any], *, history: int = 5000) -> Store:
        """A store holding what :meth:`dump` returned, its CRDs served again; writes continue the version counter."""
        store = cls(history=history)
        for entry in dump["objects"]:
            key = ObjectKey(entry["group"], entry["resource"], entry["namespace"], entry["name"])
            store._objects[key] = entry["object"]
            if key[:2] == CRD_KEY:
                store._register_crd(entry["object"])
        store._rv = int(dump["resource_version"])
        return store
