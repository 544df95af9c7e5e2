"""The lab's Kueue stand-in on worker clusters: admits queued JobSets and completes them.

A JobSet labelled ``kueue.x-k8s.io/queue-name`` that has no Workload yet is
admitted when its LocalQueue exists and points at an existing ClusterQueue whose
``stopPolicy`` (and the LocalQueue's) is not ``Hold``/``HoldAndDrain``: the stand-in
creates Workload ``jobset-<name>`` (QuotaReserved, Admitted, Finished) and marks
the JobSet ``Completed`` (condition and ``status.terminalState``, as the JobSet
controller does). JobSets that already have a Workload (running work) are never
touched.
"""

from __future__ import annotations

from typing import Any

from tenantflow.lab.changes import RESYNC_MAX_S
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers.hub import HUB_CONTEXT, KUEUE, reconcile_on_events, workload_of
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.kueue_facts import QUEUE_LABEL

HELD = ("Hold", "HoldAndDrain")
Obj = dict[str, Any]


def _cond(kind: str, reason: str, message: str) -> Obj:
    return {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now()}


class KueueStandIn:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _queue_open(self, namespace: str, queue: str) -> str | None:
        """The ClusterQueue name when ``queue`` admits work now, else None."""
        try:
            lq = self.store.get(KUEUE, "localqueues", queue, namespace)
            cq = self.store.get(KUEUE, "clusterqueues", lq["spec"]["clusterQueue"])
        except ApiError:
            return None
        if lq["spec"].get("stopPolicy") in HELD or cq["spec"].get("stopPolicy") in HELD:
            return None
        return str(cq["metadata"]["name"])

    def reconcile(self) -> None:
        try:
            jobsets = self.store.list("jobset.x-k8s.io", "jobsets", label_selector=QUEUE_LABEL)
        except ApiError:
            return
        for js in jobsets:
            meta = js["metadata"]
            if (js.get("status") or {}).get("conditions"):
                continue
            try:
                self.store.get(KUEUE, "workloads", f"jobset-{meta['name']}", meta["namespace"])
                continue
            except ApiError:
                pass
            cq = self._queue_open(meta["namespace"], meta["labels"][QUEUE_LABEL])
            if cq is None:
                continue
            workload = self.store.create(
                workload_of(self.store, js, f"jobset-{meta['name']}", dict(meta.get("labels") or {}))
            )
            workload["status"] = {
                "admission": {"clusterQueue": cq},
                "conditions": [
                    _cond("QuotaReserved", "QuotaReserved", f"quota reserved in ClusterQueue {cq}"),
                    _cond("Admitted", "Admitted", "the workload is admitted"),
                    _cond("Finished", "JobSetFinished", "jobset completed successfully"),
                ],
            }
            self.store.update_status(workload)
            self.store.update_status(
                {
                    **js,
                    "status": {
                        "restarts": 0,
                        "terminalState": "Completed",
                        "conditions": [_cond("Completed", "AllJobsCompleted", "jobset completed successfully")],
                    },
                }
            )


async def run(ctx: LabContext) -> None:
    stand_ins = [KueueStandIn(store) for name, store in ctx.stores.items() if name != HUB_CONTEXT]

    def reconcile() -> None:
        for stand_in in stand_ins:
            stand_in.reconcile()

    await reconcile_on_events([s.store for s in stand_ins], reconcile, idle_max_s=RESYNC_MAX_S)
