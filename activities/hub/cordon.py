"""Hub-side cordons: ``hub.cordon`` of the enrolling worker, ``hub.cordon_on_appearance`` (brownfield: the
runbook's second terminal, beside bootstrap) and ``hub.cordon_pool`` of the rest of its pool.

Cordons go through the ``konduktor`` CLI as the runbook documents them (:mod:`activities.common.konduktor_cli`:
``konduktor cluster cordon WORKER -n NS [--uncordon]``, "Bootstrap, then immediately cordon Hub dispatch",
"Verify the old work, then enable dispatch", "Decommission or move a worker"). The command is always run, never
skipped as "unchanged": the runbook documents the command and its effect (``DispatchReady`` stays ``False``
while the worker is cordoned), never the WorkerCluster field that holds a cordon, and neither the reference
notes nor any public Trainy schema name one, so a field read here would be a guess; a guessed field that the Hub
does not use reads "not cordoned" forever, and an uncordon decided on it would be skipped while the worker stays
cordoned. Cordon and uncordon are idempotent, so running the command again costs one Hub write. The same holds
for the pool: a member is held when it is ``DispatchReady`` (which a cordoned worker never is), not by a field.

Every cordon this module sets records on the WorkerCluster, through
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
from tenantflow.models.enrollment_workflows import ConditionWait, Cordon
from tenantflow.models.results import CordonState, EnsureResult, NoUndoData, Outcome

CORDONED_BY = "trainy.ai/cordoned-by"
CORDON_REASON = "trainy.ai/cordon-reason"
CORDON_BUDGET_S = 60.0
BROWNFIELD_REASON = "brownfield enrollment"
APPEARANCE_POLL = growing(0.2, max_s=1.0)
"""How ``hub.cordon_on_appearance`` polls the Hub for the WorkerCluster while bootstrap runs: quick at first,
then at most one read a second (the runbook says "as soon as the WorkerCluster appears")."""


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
    """``konduktor cluster cordon [--uncordon]`` of the enrolling worker, run every time (the module docstring
    says why no field decides it); ``absent`` when there is no WorkerCluster to cordon."""
    c = request.contract
    if KubeObjects(c.hub).get("WorkerCluster", c.worker_name, c.tenant_namespace) is None:
        return _result(c, Outcome.absent)
    _set_cordon(c, c.worker_name, request.cordoned, request.reason)
    return _result(c, Outcome.updated, request.cordoned)


def _result(c: WorkerEnrollment, outcome: Outcome, cordoned: bool | None = None) -> EnsureResult:
    return EnsureResult(
        layer="hub",
        kind="WorkerCluster",
        name=c.worker_name,
        namespace=c.tenant_namespace,
        outcome=outcome,
        data=NoUndoData() if cordoned is None else CordonState(cordoned=cordoned),
    )


@defn(enrollment_steps.HUB_CORDON_ON_APPEARANCE)
def cordon_on_appearance(wait: ConditionWait) -> EnsureResult:
    """The runbook's second terminal ("Bootstrap, then immediately cordon Hub dispatch"): started beside
    ``konduktor.bootstrap``, poll the Hub for the WorkerCluster (:data:`APPEARANCE_POLL`, heartbeating each
    answer) and cordon it the moment it exists; ``absent`` when it did not appear within ``wait.budget_s``. A
    cancel (the workflow gave up waiting) is raised in this thread by the SDK and ends the wait uncordoned."""
    c = wait.contract
    hub = KubeObjects(c.hub)
    appeared = poll_until(
        lambda: hub.get("WorkerCluster", c.worker_name, c.tenant_namespace),
        lambda wc: wc is not None,
        every=APPEARANCE_POLL,
        budget_s=wait.budget_s,
    )
    if not appeared.done:
        return _result(c, Outcome.absent)
    return cordon(Cordon(contract=c, cordoned=True, reason=BROWNFIELD_REASON))


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
        if request.cordoned and _dispatch_ready(wc):
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
