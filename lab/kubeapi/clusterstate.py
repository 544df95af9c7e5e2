"""The state of one emulated cluster and its read side: objects by key, the resource version counter, watch
subscriptions, reads and selectors, the served types (CRDs included), and the dump that survives a lab restart.

:class:`lab.kubeapi.store.Store` adds the writes; its docstring is the contract of both.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from typing import Any, Self

from tenantflow.lab.kubeapi import errors, selectors
from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.events import EventCallback, EventLog
from tenantflow.lab.kubeapi.objects import CRD_KEY, VOLATILE_METADATA, Obj, ObjectKey
from tenantflow.lab.kubeapi.registry import Registry, ResourceType, resource_type_from_crd


class ClusterState:
    """All objects of one cluster, read side. See :mod:`lab.kubeapi.store` for the contract."""

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
        return ((key, clone(self._objects[key])) for key in sorted(self._objects))

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
            return clone(self._existing(rt, self._key(rt, name, namespace)))

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
                clone(obj)
                for key, obj in sorted(self._objects.items())
                if key[:2] == rt.key and (not namespace or key.namespace == namespace) and labels(obj) and fields(obj)
            ]
            return items, self._rv

    def _register_crd(self, crd: Obj) -> None:
        rt = resource_type_from_crd(crd)
        self.registry.add(rt)

    # ---------------------------------------------------------------- dumps
    def snapshot(self, *, include_volatile: bool = False) -> dict[str, Any]:
        """Every object, sorted by key; uid/resourceVersion/timestamps stripped unless asked."""
        with self._lock:
            objects = []
            for key in sorted(self._objects):
                obj = clone(self._objects[key])
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
    def restore(cls, dump: dict[str, Any], *, history: int = 5000) -> Self:
        """A store holding what :meth:`dump` returned, its CRDs served again; writes continue the version counter."""
        store = cls(history=history)
        for entry in dump["objects"]:
            key = ObjectKey(entry["group"], entry["resource"], entry["namespace"], entry["name"])
            store._objects[key] = entry["object"]
            if key[:2] == CRD_KEY:
                store._register_crd(entry["object"])
        store._rv = int(dump["resource_version"])
        return store
