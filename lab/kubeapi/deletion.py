"""Deletion as kube-apiserver does it: finalizers, namespace termination, and a CRD taking its objects along.

:class:`Deletion` is the part of :class:`lab.kubeapi.store.Store` that removes objects (callers hold the
store's lock): an object with finalizers is only marked (``deletionTimestamp``) and goes when they are
emptied; a namespace is marked ``Terminating``, its contents are deleted, and it goes once it is empty and has
no finalizers; deleting a CRD deletes its custom resources and stops serving the kind. Every change is an
event with a new resourceVersion.
"""

from __future__ import annotations

from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.clusterstate import ClusterState
from tenantflow.lab.kubeapi.objects import CRD_KEY, NAMESPACE_KEY, Obj, ObjectKey, now
from tenantflow.lab.kubeapi.registry import resource_type_from_crd


class Deletion(ClusterState):
    """The cluster's state and how objects leave it."""

    def _delete(self, key: ObjectKey, current: Obj) -> Obj:
        meta = current["metadata"]
        if key[:2] == NAMESPACE_KEY:
            return self._delete_namespace(key, current)
        if meta.get("finalizers"):
            if not meta.get("deletionTimestamp"):
                marked = clone(current)
                marked["metadata"].update(
                    deletionTimestamp=now(), deletionGracePeriodSeconds=0, resourceVersion=self._bump()
                )
                self._objects[key] = marked
                self._events.emit("MODIFIED", key, marked, self._rv)
                return clone(marked)
            return clone(current)
        self._remove(key, current)
        return clone(current)

    def _remove(self, key: ObjectKey, last: Obj) -> None:
        gone = clone(last)
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
            marked = clone(current)
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
        return clone(current)

    def _finish_namespace(self, key: ObjectKey, ns: Obj) -> None:
        if key not in self._objects:
            return
        if any(k.namespace == key.name for k in self._objects) or ns["metadata"].get("finalizers"):
            return
        self._remove(key, ns)
