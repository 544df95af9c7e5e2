"""Hub-side cordons: ``hub.cordon`` of the enrolling worker and ``hub.cordon_pool`` of the rest of its pool.

Cordons go through the ``konduktor`` CLI as the runbook documents them (:mod:`activities.common.konduktor_cli`:
``cluster cordon [--uncordon]``). Every cordon this module sets records on the WorkerCluster, through
:class:`activities.common.kubeobjects.KubeObjects`, who set it (:data:`CORDONED_BY`, the run's workflow id) and
why (:data:`CORDON_REASON`); ``hub.cordon_pool`` holds the other dispatch-ready members of the tenant's pool for
an exact-routing canary (:mod:`activities.hub.canary`), waits until none of them is DispatchReady, and releases
only the members this run cordoned.
"""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.runs import this_run
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import Cordon
from tenantflow.models.results import CordonState, EnsureResult, Outcome

CORDONED_BY = "trainy.ai/cordoned-by"
CORDON_REASON = "trainy.ai/cordon-reason"
CORDON_BUDGET_S = 60.0


def _set_cordon(c: WorkerEnrollment, name: str, cordoned: bool, reason: str) -> None:
    """``konduktor cluster cordon [--uncordon]`` one WorkerCluster; who and why are recorded before a cordon and
    cleared after an uncordon."""
    who = f"tenantflow {this_run()}" if cordoned else None
    record = {"metadata": {"annotations": {CORDON_REASON: reason if cordoned else None, CORDONED_BY: who}}}
    if cordoned:
        KubeObjects(c.hub).patch("WorkerCluster", name, c.tenant_namespace, record)
    konduktor_cli.run(
        c.hub, "cluster", "cordon", name, "-n", c.tenant_namespace, *(() if cordoned else ("--uncordon",))
    )
    if not cordoned:
        KubeObjects(c.hub).patch("WorkerCluster", name, c.tenant_namespace, record)


@defn(enrollment_steps.HUB_CORDON)
def cordon(request: Cordon) -> EnsureResult:
    c = request.contract
    hub = KubeObjects(c.hub)
    wc = hub.get("WorkerCluster", c.worker_name, c.tenant_namespace)
    if wc is None:
        return EnsureResult(
            layer="hub", kind="WorkerCluster", name=c.worker_name, namespace=c.tenant_namespace, outcome=Outcome.absent
        )
    if bool((wc.get("spec") or {}).get("cordoned")) == request.cordoned:
        outcome = Outcome.unchanged
    else:
        _set_cordon(c, c.worker_name, request.cordoned, request.reason)
        outcome = Outcome.updated
    return EnsureResult(
        layer="hub",
        kind="WorkerCluster",
        name=c.worker_name,
        namespace=c.tenant_namespace,
        outcome=outcome,
        data=CordonState(cordoned=request.cordoned),
    )


def _dispatch_ready(wc: dict[str, Any]) -> bool:
    return any(
        cond["type"] == "DispatchReady" and cond["status"] == "True"
        for cond in (wc.get("status") or {}).get("conditions") or []
    )


@defn(enrollment_steps.HUB_CORDON_POOL)
def cordon_pool(request: Cordon) -> list[EnsureResult]:
    """Exact routing: cordon every other dispatch-ready member of the tenant's pool and wait until none is
    DispatchReady; with ``cordoned=False`` uncordon exactly the members this run cordoned."""
    c = request.contract
    hub = KubeObjects(c.hub)
    me = f"tenantflow {this_run()}"
    results = []
    for wc in hub.list("WorkerCluster", c.tenant_namespace):
        name = wc["metadata"]["name"]
        annotations = wc["metadata"].get("annotations") or {}
        if name == c.worker_name:
            continue
        if request.cordoned and _dispatch_ready(wc) and not (wc.get("spec") or {}).get("cordoned"):
            _set_cordon(c, name, True, request.reason)
        elif request.cordoned or annotations.get(CORDONED_BY) != me:
            continue
        else:
            _set_cordon(c, name, False, "")
        results.append(
            EnsureResult(
                layer="hub",
                kind="WorkerCluster",
                name=name,
                namespace=c.tenant_namespace,
                outcome=Outcome.updated,
                data=CordonState(cordoned=request.cordoned),
            )
        )
    held = {r.name for r in results} if request.cordoned else set()
    if not held:
        return results
    quiet = poll_until(
        lambda: [
            wc["metadata"]["name"]
            for wc in hub.list("WorkerCluster", c.tenant_namespace)
            if wc["metadata"]["name"] in held and _dispatch_ready(wc)
        ],
        lambda still: not still,
        every=growing(0.2, max_s=2.0),
        budget_s=CORDON_BUDGET_S,
        detail=list,
    )
    if not quiet.done:
        raise fail("CordonTimeout", f"pool members still DispatchReady after cordon: {', '.join(quiet.value)}")
    return results
