"""The lab's Trainy worker agent: redeems the enrollment, installs its components, heartbeats, upgrades Kueue/JobSet,
applies the preset.

It acts on every non-Hub store whose ``trainy-system/trainy-worker-agent``
Deployment exists (``konduktor worker bootstrap`` creates it; reset removes it):

1. the redemption token ``konduktor worker bootstrap`` left in the ``trainy-bootstrap``
   Secret is presented to the Hub once; the Secret is emptied and keeps only the
   outcome (``trainy.ai/redeemed`` or ``trainy.ai/redeem-refused``);
2. it installs the tunnel credentials, the log collector and the metrics agent
   (labelled ``trainy.ai/installed-by=konduktor``);
3. it reports a heartbeat and its lab context on the WorkerCluster (the tunnel);
4. it upgrades the Kueue and JobSet Deployments in place to the organization's
   images (creating them on a greenfield worker); running work is never touched;
5. it applies the WorkerCluster's scheduling preset: absent objects are created
   with the ownership labels, objects carrying this WorkerCluster's labels are
   updated in place, any other object is refused
   (:data:`lab.konduktor.facts.ADOPTION_REFUSAL`), and reports the outcome
   for the WorkerCluster's generation.
"""

from __future__ import annotations

import base64
import copy
import json
import secrets
from typing import Any

from tenantflow.lab import kueue_facts
from tenantflow.lab.changes import RESYNC_MAX_S
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers.hub import (
    CONFIG_REPORT,
    HEARTBEAT,
    HUB_CONTEXT,
    LAB_CONTEXT,
    RedeemRefused,
    organization,
    reconcile_on_events,
    redeem,
)
from tenantflow.lab.konduktor.facts import (
    ADOPTION_REFUSAL,
    AGENT,
    AGENT_NAMESPACE,
    BOOTSTRAP_SECRET,
    BYOC_NAMESPACE,
    INSTALLED_BY,
    INSTALLER,
    LOG_COLLECTOR,
    MANAGED_BY,
    METRICS_AGENT,
    REDEEMED,
    REFUSED,
    SCHEDULING_MANAGER,
    TUNNEL_SECRET,
    WORKER_LABEL,
    preset_objects,
    worker_identity,
)
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.objects import custom_defaults
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.kueue_facts import JOBSET_DEPLOYMENT, JOBSET_IMAGE, KUEUE_DEPLOYMENT, KUEUE_IMAGE
from tenantflow.lab.workloads import deployment

Obj = dict[str, Any]


def _get(store: Store, group: str, resource: str, name: str, namespace: str | None = None) -> Obj | None:
    try:
        return store.get(group, resource, name, namespace)
    except ApiError:
        return None


class WorkerAgent:
    """One worker cluster's agent, talking to the Hub store as its tunnel."""

    def __init__(self, context: str, worker: Store, hub: Store) -> None:
        self.context = context
        self.worker = worker
        self.hub = hub

    def reconcile(self) -> None:
        if _get(self.worker, "apps", "deployments", AGENT, AGENT_NAMESPACE) is None:
            return
        secret = _get(self.worker, "", "secrets", BOOTSTRAP_SECRET, AGENT_NAMESPACE)
        if secret is None:
            return
        annotations = secret["metadata"].get("annotations") or {}
        if REFUSED in annotations:
            return
        if REDEEMED not in annotations:
            self._redeem(secret)
            return
        self._install_components()
        ns, name = annotations[REDEEMED].split("/", 1)
        wc = _get(self.hub, "trainy.ai", "workerclusters", name, ns)
        if wc is None:
            return
        self._heartbeat(wc)
        if self._upgrade_dependencies(wc):
            self._apply_preset(wc)

    def _redeem(self, secret: Obj) -> None:
        """Present the redemption token once; the Secret keeps only the outcome, not the token."""
        token = base64.b64decode((secret.get("data") or {}).get("token", "")).decode()
        try:
            wc = redeem(self.hub, token)
            mark = {REDEEMED: f"{wc['metadata']['namespace']}/{wc['metadata']['name']}"}
        except RedeemRefused as exc:
            mark = {REFUSED: str(exc)}
        emptied = copy.deepcopy(secret)
        emptied["metadata"]["annotations"] = {**(secret["metadata"].get("annotations") or {}), **mark}
        emptied["data"] = {}
        self.worker.replace("", "secrets", BOOTSTRAP_SECRET, emptied, AGENT_NAMESPACE)

    def _install_components(self) -> None:
        """The tunnel credentials, log collector and metrics agent (what the real agent's Helm release adds)."""
        labels = {INSTALLED_BY: INSTALLER}
        if _get(self.worker, "", "secrets", TUNNEL_SECRET, AGENT_NAMESPACE) is None:
            self.worker.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "Opaque",
                    "metadata": {
                        "name": TUNNEL_SECRET,
                        "namespace": AGENT_NAMESPACE,
                        "labels": {**labels, "trainy.ai/component": "tunnel"},
                    },
                    "data": {"token": base64.b64encode(secrets.token_bytes(32)).decode()},
                }
            )
        for name, image, component in (
            (LOG_COLLECTOR, "ghcr.io/trainy-ai/log-collector:v1", "log-collector"),
            (METRICS_AGENT, "ghcr.io/trainy-ai/vmagent:v1", "metrics-agent"),
        ):
            if _get(self.worker, "apps", "deployments", name, BYOC_NAMESPACE) is None:
                self.worker.create(
                    deployment(BYOC_NAMESPACE, name, image, {**labels, "trainy.ai/component": component})
                )

    def _heartbeat(self, wc: Obj) -> None:
        annotations = wc["metadata"].get("annotations") or {}
        if HEARTBEAT not in annotations:
            self.hub.patch(
                "trainy.ai",
                "workerclusters",
                wc["metadata"]["name"],
                {"metadata": {"annotations": {HEARTBEAT: now(), LAB_CONTEXT: self.context}}},
                MERGE_PATCH,
                wc["metadata"]["namespace"],
            )

    def _dependencies(self, wc: Obj) -> list[tuple[str, str, str]]:
        """(namespace, Deployment, image) of Kueue and JobSet at the versions the WorkerCluster's Organization
        selected (``spec.kueueVersion``, ``spec.jobsetVersion``; runbook: "The worker agent upgrades Kueue and
        JobSet in place to the versions selected by the organization"); one it selects none of is left alone."""
        spec = organization(self.hub, wc["metadata"]["namespace"]).get("spec") or {}
        return [
            (*where, kueue_facts.image(repository, spec[field]))
            for where, repository, field in (
                (KUEUE_DEPLOYMENT, KUEUE_IMAGE, "kueueVersion"),
                (JOBSET_DEPLOYMENT, JOBSET_IMAGE, "jobsetVersion"),
            )
            if spec.get(field)
        ]

    def _upgrade_dependencies(self, wc: Obj) -> bool:
        """Move one Deployment toward the organization image per pass; True when all match."""
        for namespace, name, wanted in self._dependencies(wc):
            current = _get(self.worker, "apps", "deployments", name, namespace)
            if current is None:
                if _get(self.worker, "", "namespaces", namespace) is None:
                    self.worker.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
                self.worker.create(deployment(namespace, name, wanted))
                return False
            containers = current["spec"]["template"]["spec"]["containers"]
            if containers[0]["image"] != wanted:
                new = copy.deepcopy(current)
                new["spec"]["template"]["spec"]["containers"][0]["image"] = wanted
                self.worker.replace("apps", "deployments", name, new, namespace)
                return False
        return True

    def _apply_preset(self, wc: Obj) -> None:
        meta, spec = wc["metadata"], wc.get("spec") or {}
        identity = worker_identity(meta["namespace"], meta["name"])
        served = self._served_kueue()
        objs = [
            {**obj, "apiVersion": served}
            for obj in preset_objects(
                (spec.get("scheduling") or {}).get("preset", "gke-dws"), spec.get("workloadNamespaces") or []
            )
        ]
        refused = [self._check_owner(obj, identity) for obj in objs]
        problems = [p for p in refused if p]
        if problems:
            report = {"ok": False, "reason": "AdoptionRefused", "message": "; ".join(problems)}
        else:
            for obj in objs:
                self._ensure(obj, identity)
            report = {"ok": True, "reason": "Applied", "message": "scheduling preset applied"}
        report["generation"] = meta.get("generation", 1)
        text = json.dumps(report, sort_keys=True)
        if (meta.get("annotations") or {}).get(CONFIG_REPORT) != text:
            self.hub.patch(
                "trainy.ai",
                "workerclusters",
                meta["name"],
                {"metadata": {"annotations": {CONFIG_REPORT: text}}},
                MERGE_PATCH,
                meta["namespace"],
            )

    def _served_kueue(self) -> str:
        """The Kueue API version the agent writes: the worker's storage version."""
        rt = self.worker.registry.get("kueue.x-k8s.io", "clusterqueues")
        return f"kueue.x-k8s.io/{rt.storage_version if rt else 'v1beta2'}"

    def _check_owner(self, obj: Obj, identity: str) -> str:
        rt = self.worker.registry.for_object(obj)
        meta = obj["metadata"]
        current = _get(self.worker, rt.group, rt.plural, meta["name"], meta.get("namespace"))
        if current is None:
            return ""
        labels = current["metadata"].get("labels") or {}
        owner = labels.get(WORKER_LABEL)
        where = f"{obj['kind']}/{meta.get('namespace', '') + '/' if meta.get('namespace') else ''}{meta['name']}"
        if owner == identity and labels.get(MANAGED_BY) == SCHEDULING_MANAGER:
            return ""
        if owner:
            return f"{ADOPTION_REFUSAL}: {where} is owned by WorkerCluster {owner}"
        return f"{ADOPTION_REFUSAL}: {where}"

    def _ensure(self, obj: Obj, identity: str) -> None:
        """Create the preset object, or update it in place when its spec differs once the server defaulted it."""
        rt = self.worker.registry.for_object(obj)
        meta = obj["metadata"]
        labels = {MANAGED_BY: SCHEDULING_MANAGER, WORKER_LABEL: identity}
        current = _get(self.worker, rt.group, rt.plural, meta["name"], meta.get("namespace"))
        if current is None:
            self.worker.create({**obj, "metadata": {**meta, "labels": labels}})
            return
        want = copy.deepcopy(obj)
        custom_defaults(rt, want)
        if current.get("spec") != want["spec"]:
            self.worker.replace(
                rt.group, rt.plural, meta["name"], {**current, "spec": obj["spec"]}, meta.get("namespace")
            )


async def run(ctx: LabContext) -> None:
    hub = ctx.stores.get(HUB_CONTEXT)
    if hub is None:
        return
    agents = [WorkerAgent(name, store, hub) for name, store in ctx.stores.items() if name != HUB_CONTEXT]

    def reconcile() -> None:
        for agent in agents:
            agent.reconcile()

    await reconcile_on_events(list(ctx.stores.values()), reconcile, idle_max_s=RESYNC_MAX_S)
