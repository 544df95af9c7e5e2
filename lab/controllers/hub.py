"""The lab's Konduktor Hub: one-shot redemption, WorkerCluster conditions, cordon and MultiKueue-style dispatch.

* :func:`redeem` checks a redemption token's Ed25519 signature (:mod:`lab.konduktor.blob`) against the
  BootstrapEnrollment's ``spec.publicKey``, refuses one already used (``status.usedAt`` set), sets
  ``usedAt`` and creates the WorkerCluster (uncordoned, like the real Hub).
* The reconciler computes the four Kueue-style conditions of every WorkerCluster
  from what the worker agent reports over the "tunnel" (annotations
  :data:`HEARTBEAT` and :data:`CONFIG_REPORT`): ``Registered`` (enrollment
  redeemed), ``Connected`` (heartbeat seen), ``WorkerConfigured`` (the agent applied
  the current generation), ``DispatchReady`` (connected, configured, not cordoned), plus
  ``ObservabilityIngestHealthy=Unknown`` (``NoTrafficYet``: the lab never ships telemetry).
* JobSets created on the Hub with a ``kueue.x-k8s.io/queue-name`` label are
  dispatched to a DispatchReady worker of their namespace (copied there with
  ``kueue.x-k8s.io/multikueue-origin=hub``) and their status is synced back, as
  MultiKueue does. Where a JobSet went is recorded where Kueue records it: the Hub
  Workload labelled ``kueue.x-k8s.io/job-uid=<the JobSet's uid>`` has
  ``status.clusterName`` (the WorkerCluster's name). The JobSet itself carries
  nothing of the dispatch: the Hub serves the upstream JobSet CRD, whose status has
  no such field.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable
from typing import Any

from tenantflow.lab.changes import RESYNC_MAX_S, RESYNC_MIN_S, Changes, Resync
from tenantflow.lab.context import LabContext
from tenantflow.lab.konduktor import blob
from tenantflow.lab.konduktor.facts import WORKER_LABEL, worker_identity
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.kueue_facts import ORIGIN_LABEL, QUEUE_LABEL

HUB_CONTEXT = "hub"
TRAINY = "trainy.ai"
HEARTBEAT = "trainy.ai/agent-heartbeat"
CONFIG_REPORT = "trainy.ai/worker-config"
LAB_CONTEXT = "trainy.ai/lab-context"
ORIGIN = "hub"
KUEUE = "kueue.x-k8s.io"
JOB_UID = "kueue.x-k8s.io/job-uid"
Obj = dict[str, Any]
log = logging.getLogger(__name__)


class RedeemRefused(Exception):
    """The Hub refused a redemption token (bad signature, unknown enrollment, already redeemed)."""


def organization(store: Store, namespace: str) -> Obj:
    """The Organization whose namespaces include ``namespace`` (empty when none does)."""
    for org in store.list(TRAINY, "organizations"):
        if namespace in ((org.get("spec") or {}).get("namespaces") or []):
            return org
    return {}


def redeem(store: Store, token: str) -> Obj:
    """Redeem a bootstrap's redemption token once; return the new WorkerCluster or raise :class:`RedeemRefused`.

    The WorkerCluster takes its workload namespaces and scheduling preset from the tenant's Organization.
    """
    try:
        claims = json.loads(token)
        ns, worker = str(claims["namespace"]), str(claims["worker"])
    except (ValueError, KeyError, TypeError):
        raise RedeemRefused("malformed redemption token") from None
    try:
        enrollment = store.get(TRAINY, "bootstrapenrollments", worker, ns)
    except ApiError:
        raise RedeemRefused(f"no BootstrapEnrollment {ns}/{worker} on the Hub") from None
    try:
        claims = blob.verify(token, enrollment["spec"]["publicKey"])
    except blob.BlobError as exc:
        raise RedeemRefused(f"{exc} for {ns}/{worker}") from None
    if claims["enrollmentId"] != enrollment["spec"].get("enrollmentId"):
        raise RedeemRefused("the token belongs to an earlier key of this enrollment; run cluster enroll again")
    used = (enrollment.get("status") or {}).get("usedAt")
    if used:
        raise RedeemRefused(f"enrollment {ns}/{worker} was already redeemed at {used}; create a new one")
    enrollment["status"] = {**(enrollment.get("status") or {}), "usedAt": now(), "workerCluster": worker}
    store.update_status(enrollment)
    org = organization(store, ns).get("spec") or {}
    return store.create(
        {
            "apiVersion": "trainy.ai/v1alpha1",
            "kind": "WorkerCluster",
            "metadata": {
                "name": worker,
                "namespace": ns,
                "labels": {WORKER_LABEL: worker_identity(ns, worker)},
            },
            "spec": {
                "cordoned": False,
                "enrollment": worker,
                "workloadNamespaces": org.get("namespaces", [ns]),
                "scheduling": {"preset": org.get("schedulingPreset", "gke-dws")},
            },
        }
    )


def workload_of(store: Store, job: Obj, name: str, labels: dict[str, str]) -> Obj:
    """A Kueue Workload ``name`` for the queued JobSet ``job`` (one pod set), at the Kueue version ``store``
    stores, labelled ``labels`` and with the job's queue label."""
    meta = job["metadata"]
    queue = meta["labels"][QUEUE_LABEL]
    served = store.registry.get(KUEUE, "workloads")
    return {
        "apiVersion": f"{KUEUE}/{served.storage_version if served else 'v1beta2'}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": meta["namespace"], "labels": {**labels, QUEUE_LABEL: queue}},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1}]},
    }


def condition(kind: str, ok: bool, reason: str, message: str, generation: int) -> Obj:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
    }


class HubController:
    """Reconciles WorkerCluster conditions and dispatch on the Hub store."""

    def __init__(self, hub: Store, stores: dict[str, Store]) -> None:
        self.hub = hub
        self.stores = stores

    def reconcile(self) -> None:
        for wc in self.hub.list(TRAINY, "workerclusters"):
            self._conditions(wc)
        self._dispatch()

    def _conditions(self, wc: Obj) -> None:
        meta, spec = wc["metadata"], wc.get("spec") or {}
        gen = int(meta.get("generation", 1))
        annotations = meta.get("annotations") or {}
        try:
            enrollment = self.hub.get(TRAINY, "bootstrapenrollments", spec.get("enrollment", ""), meta["namespace"])
            used = (enrollment.get("status") or {}).get("usedAt", "")
        except ApiError:
            used = "decommissioned"
        registered = condition(
            "Registered",
            bool(used),
            "Redeemed" if used else "NotRedeemed",
            f"one-shot enrollment redeemed at {used}" if used else "status.usedAt is empty",
            gen,
        )
        beat = annotations.get(HEARTBEAT)
        connected = condition(
            "Connected",
            bool(beat),
            "HeartbeatCurrent" if beat else "NoHeartbeat",
            f"worker tunnel heartbeat at {beat}" if beat else "the worker agent has not connected",
            gen,
        )
        report = json.loads(annotations.get(CONFIG_REPORT) or "{}")
        current = report.get("generation") == gen
        configured = condition(
            "WorkerConfigured",
            bool(report.get("ok")) and current,
            report.get("reason", "Pending") if current else "Pending",
            report.get("message", "") if current else f"waiting for the worker agent to apply generation {gen}",
            gen,
        )
        cordoned = bool(spec.get("cordoned"))
        ready = connected["status"] == configured["status"] == "True" and not cordoned
        why = (
            "Cordoned"
            if cordoned
            else "NotConnected"
            if connected["status"] != "True"
            else "NotConfigured"
            if configured["status"] != "True"
            else "Active"
        )
        dispatch = condition(
            "DispatchReady",
            ready,
            why,
            "MultiKueueCluster Active, AdmissionCheck Active, ClusterQueue Ready"
            if ready
            else f"no new dispatch: {why}",
            gen,
        )
        traffic = {
            "type": "ObservabilityIngestHealthy",
            "status": "Unknown",
            "reason": "NoTrafficYet",
            "message": "no log or metric traffic through the tunnel yet",
            "observedGeneration": gen,
        }
        wanted = [registered, connected, configured, dispatch, traffic]
        old = {c["type"]: c for c in (wc.get("status") or {}).get("conditions") or []}
        stamped = [
            {
                **c,
                "lastTransitionTime": old[c["type"]].get("lastTransitionTime", now())
                if c["type"] in old and old[c["type"]]["status"] == c["status"]
                else now(),
            }
            for c in wanted
        ]
        strip = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in old.values()]
        if strip != wanted:
            new = copy.deepcopy(wc)
            new["status"] = {**(wc.get("status") or {}), "conditions": stamped}
            self.hub.update_status(new)

    def _ready_worker(self, namespace: str) -> tuple[str, Store] | None:
        for wc in self.hub.list(TRAINY, "workerclusters", namespace):
            conds = {c["type"]: c["status"] for c in (wc.get("status") or {}).get("conditions") or []}
            target = (wc["metadata"].get("annotations") or {}).get(LAB_CONTEXT, "")
            if conds.get("DispatchReady") == "True" and target in self.stores:
                return wc["metadata"]["name"], self.stores[target]
        return None

    def _workload(self, job: Obj) -> Obj | None:
        """The Hub Workload of ``job``: the one labelled with its uid."""
        meta = job["metadata"]
        found = self.hub.list(KUEUE, "workloads", meta["namespace"], label_selector=f"{JOB_UID}={meta['uid']}")
        return found[0] if found else None

    def _dispatched_to(self, workload: Obj) -> Store | None:
        """The worker store of the WorkerCluster named by the Workload's ``status.clusterName``."""
        cluster = (workload.get("status") or {}).get("clusterName", "")
        try:
            wc = self.hub.get(TRAINY, "workerclusters", cluster, workload["metadata"]["namespace"])
        except ApiError:
            return None
        return self.stores.get((wc["metadata"].get("annotations") or {}).get(LAB_CONTEXT, ""))

    def _admit(self, job: Obj, cluster: str) -> None:
        """Kueue's Workload for ``job`` on the Hub (named and labelled the way Kueue does), dispatched to
        ``cluster``."""
        meta = job["metadata"]
        workload = workload_of(self.hub, job, f"jobset-{meta['name']}-{meta['uid'][:5]}", {JOB_UID: meta["uid"]})
        workload["metadata"]["ownerReferences"] = [
            {
                "apiVersion": job["apiVersion"],
                "kind": "JobSet",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        workload = self.hub.create(workload)
        self.hub.update_status({**workload, "status": {"clusterName": cluster}})

    def _dispatch(self) -> None:
        for job in self.hub.list("jobset.x-k8s.io", "jobsets", label_selector=QUEUE_LABEL):
            meta = job["metadata"]
            workload = self._workload(job)
            if workload is None:
                worker = self._ready_worker(meta["namespace"])
                if worker is None:
                    continue
                cluster, store = worker
                store.create(
                    {
                        "apiVersion": job["apiVersion"],
                        "kind": "JobSet",
                        "metadata": {
                            "name": meta["name"],
                            "namespace": meta["namespace"],
                            "labels": {**meta.get("labels", {}), ORIGIN_LABEL: ORIGIN},
                        },
                        "spec": job.get("spec") or {},
                    }
                )
                self._admit(job, cluster)
                continue
            remote_store = self._dispatched_to(workload)
            if remote_store is None:
                continue
            try:
                remote = remote_store.get("jobset.x-k8s.io", "jobsets", meta["name"], meta["namespace"])
            except ApiError:
                continue
            if remote.get("status") and remote["status"] != job.get("status"):
                self.hub.update_status({**job, "status": remote["status"]})


async def reconcile_on_events(
    stores: list[Store],
    reconcile: Callable[[], None],
    period_s: float = RESYNC_MIN_S,
    *,
    changes: Changes | None = None,
    idle_max_s: float | None = None,
) -> None:
    """Run ``reconcile`` after every batch of events of ``stores`` (or of ``changes``, when given) and on a resync
    period until cancelled. The period is ``period_s``; with ``idle_max_s`` it doubles while nothing changes, up to
    that ceiling, and falls back to ``period_s`` on a change or a failed reconcile (which is retried)."""
    wake = changes or Changes()
    resync = Resync(period_s, idle_max_s if idle_max_s is not None else period_s)
    unsubscribe = [store.subscribe(wake.bump) for store in stores]
    try:
        while True:
            seen = wake.revision
            failed = False
            try:
                reconcile()
            except ApiError as exc:
                log.warning("reconcile failed: %s", exc)
                failed = True
            resync.after(await wake.wait(seen, resync.period_s) or failed)
            await asyncio.sleep(0.02)
    finally:
        for stop in unsubscribe:
            stop()


async def run(ctx: LabContext) -> None:
    hub = ctx.stores.get(HUB_CONTEXT)
    if hub is None:
        return
    controller = HubController(hub, ctx.stores)
    await reconcile_on_events(list(ctx.stores.values()), controller.reconcile, idle_max_s=RESYNC_MAX_S)
