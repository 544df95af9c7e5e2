"""The lab's reservation operator: Reservations label and taint their nodes, conflicts go to status.

On every Reservation or Node event it reconciles the whole (small) cluster:

* each node listed by live Reservations belongs to the first Reservation that claimed it
  (the one whose tenant already labels it, else the first seen); the others get a
  ``status.conflicts`` entry naming the node and the holding Reservation, and the node
  is left alone;
* owned nodes get ``reserved.tenant=<spec.tenant>``, the taint
  ``reserved.tenant=<tenant>:<taintEffect>`` when ``applyTaint``, and the annotation
  :data:`HOLDER_ANNOTATION` (so nodes reserved by hand are never touched);
* nodes the operator labelled whose Reservation is gone, or no longer lists them, lose
  the label, taint and annotation;
* status: ``phase`` Ready / Conflict / Pending, ``reservedNodes``, ``conflicts``, a
  ``Ready`` condition and ``observedGeneration``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from pathlib import Path
from typing import Any

from tenantflow.lab import pitfalls
from tenantflow.lab.context import LabContext
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.store import ObjectKey, Store, now

CONTEXT = "tenant-cluster"
GROUP = "scheduling.example.io"
LABEL = "reserved.tenant"
HOLDER_ANNOTATION = "scheduling.example.io/reservation"
Obj = dict[str, Any]
log = logging.getLogger(__name__)


class ReservationOperator:
    """Reconciles Reservations against the nodes of one store."""

    def __init__(self, store: Store, state_dir: Path | None = None) -> None:
        self.store = store
        self.state_dir = state_dir
        self._order: dict[str, int] = {}

    def _reservations(self) -> list[Obj]:
        try:
            items = self.store.list(GROUP, "reservations")
        except ApiError:
            return []
        names = [res["metadata"]["name"] for res in items]
        self._order = {name: rank for name, rank in self._order.items() if name in names}
        for name in names:
            self._order.setdefault(name, max(self._order.values(), default=-1) + 1)
        return [r for r in items if not r["metadata"].get("deletionTimestamp")]

    def reconcile(self) -> None:
        reservations = self._reservations()
        if pitfalls.is_on(self.state_dir, pitfalls.Pitfall.evict_on_release):
            self._default_evict_on_release(reservations)
        nodes = {n["metadata"]["name"]: n for n in self.store.list("", "nodes")}
        owner: dict[str, Obj] = {}
        conflicts: dict[str, list[Obj]] = {}
        for res in sorted(reservations, key=lambda r: self._claim_rank(r, nodes)):
            tenant = res["spec"]["tenant"]
            for node in res["spec"].get("reservedNodes") or []:
                holder = owner.get(node)
                label = ((nodes.get(node) or {}).get("metadata", {}).get("labels") or {}).get(LABEL)
                if holder is None and label and label != tenant and not self._ours(nodes.get(node)):
                    conflicts.setdefault(res["metadata"]["name"], []).append(
                        {"node": node, "tenant": label, "message": f"node {node} is reserved by hand for {label}"}
                    )
                elif holder is None:
                    owner[node] = res
                elif holder is not res:
                    conflicts.setdefault(res["metadata"]["name"], []).append(
                        {
                            "node": node,
                            "reservation": holder["metadata"]["name"],
                            "tenant": holder["spec"]["tenant"],
                            "message": f"node {node} is already in Reservation {holder['metadata']['name']} "
                            f"of tenant {holder['spec']['tenant']}",
                        }
                    )
        for name, node in nodes.items():
            self._sync_node(node, owner.get(name))
        for res in reservations:
            self._set_status(res, nodes, owner, conflicts.get(res["metadata"]["name"], []))

    def _default_evict_on_release(self, reservations: list[Obj]) -> None:
        """The ``evict_on_release`` pitfall: the operator defaults every Reservation to evictOnRelease=true."""
        for res in reservations:
            if res["spec"].get("evictOnRelease") is not True:
                res["spec"]["evictOnRelease"] = True
                self.store.patch(
                    GROUP,
                    "reservations",
                    res["metadata"]["name"],
                    {"spec": {"evictOnRelease": True}},
                    MERGE_PATCH,
                )

    def _claim_rank(self, res: Obj, nodes: dict[str, Obj]) -> tuple[int, int]:
        name = res["metadata"]["name"]
        holds = any(
            ((nodes.get(n) or {}).get("metadata", {}).get("annotations") or {}).get(HOLDER_ANNOTATION) == name
            for n in res["spec"].get("reservedNodes") or []
        )
        return (0 if holds else 1, self._order.get(name, 0))

    @staticmethod
    def _ours(node: Obj | None) -> bool:
        return bool(node and (node["metadata"].get("annotations") or {}).get(HOLDER_ANNOTATION))

    def _sync_node(self, node: Obj, res: Obj | None) -> None:
        new = copy.deepcopy(node)
        meta = new["metadata"]
        labels = meta.setdefault("labels", {})
        annotations = meta.setdefault("annotations", {})
        spec = new.setdefault("spec", {})
        taints = [t for t in spec.get("taints") or [] if not (self._ours(node) and t.get("key") == LABEL)]
        if res is not None:
            tenant = res["spec"]["tenant"]
            labels[LABEL] = tenant
            annotations[HOLDER_ANNOTATION] = res["metadata"]["name"]
            if res["spec"].get("applyTaint", True):
                taints = [t for t in taints if t.get("key") != LABEL]
                taints.append({"key": LABEL, "value": tenant, "effect": res["spec"].get("taintEffect", "NoSchedule")})
        elif self._ours(node):
            labels.pop(LABEL, None)
            annotations.pop(HOLDER_ANNOTATION, None)
        else:
            return
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        if not annotations:
            meta.pop("annotations")
        if new != node:
            self.store.replace("", "nodes", meta["name"], new)

    def _set_status(self, res: Obj, nodes: dict[str, Obj], owner: dict[str, Obj], conflicts: list[Obj]) -> None:
        name = res["metadata"]["name"]
        held = sorted(n for n, r in owner.items() if r["metadata"]["name"] == name and n in nodes)
        missing = sorted(set(res["spec"].get("reservedNodes") or []) - set(nodes))
        if conflicts:
            phase, reason, message = "Conflict", "NodeConflict", "; ".join(c["message"] for c in conflicts)
        elif missing:
            phase, reason, message = "Pending", "NodesMissing", "nodes not found: " + ", ".join(missing)
        else:
            phase, reason, message = "Ready", "NodesReserved", f"{len(held)} nodes labelled and tainted"
        old = res.get("status") or {}
        ready = "True" if phase == "Ready" else "False"
        previous: Obj = next((c for c in old.get("conditions") or [] if c.get("type") == "Ready"), {})
        condition = {
            "type": "Ready",
            "status": ready,
            "reason": reason,
            "message": message,
            "lastTransitionTime": previous.get("lastTransitionTime", now())
            if previous.get("status") == ready
            else now(),
        }
        status = {
            "phase": phase,
            "observedGeneration": res["metadata"].get("generation", 1),
            "reservedNodes": held,
            "conflicts": conflicts,
            "conditions": [condition],
        }
        if status != old:
            self.store.patch(GROUP, "reservations", name, {"status": status}, MERGE_PATCH, subresource="status")


async def run(ctx: LabContext) -> None:
    """Reconcile the tenant cluster's Reservations whenever a Reservation or Node changes."""
    store = ctx.stores[CONTEXT]
    operator = ReservationOperator(store, ctx.state_dir)
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def on_event(event_type: str, key: ObjectKey, obj: Obj) -> None:
        if (key.group, key.resource) in ((GROUP, "reservations"), ("", "nodes")):
            loop.call_soon_threadsafe(wake.set)

    unsubscribe = store.subscribe(on_event)
    try:
        while True:
            wake.clear()
            try:
                operator.reconcile()
            except ApiError:
                log.exception("reservation reconcile failed; retrying on the next event")
            await wake.wait()
    finally:
        unsubscribe()
