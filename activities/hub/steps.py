"""Hub-side enrollment activities: permission preflight, conditions, cordon, canary, decommission.

Writes go through the ``konduktor`` CLI as the runbook documents them (:mod:`activities.common.konduktor_cli`:
``cluster cordon``, ``cluster decommission --yes``; the enrollment itself is ``konduktor.bootstrap``); reads
and the cordon record go to the explicit Hub target through :class:`activities.common.kubeobjects.KubeObjects`.
Waits poll with heartbeats and backoff. Every cordon this module sets records who set it (:data:`CORDONED_BY`,
the run's workflow id) and why (:data:`CORDON_REASON`); ``hub.cordon_pool`` holds the other dispatch-ready
members of the tenant's pool for an exact-routing canary and releases only the
members this run cordoned.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.runs import this_run
from tenantflow.models import runbook
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import (
    ADOPTION_REFUSAL,
    AGENT_NAMESPACE,
    BYOC_NAMESPACE,
    QUEUE_LABEL,
    Condition,
    ConditionReport,
    ConditionWait,
    Cordon,
    EnrollmentStep,
)
from tenantflow.models.results import CordonState, EnsureResult, Finding, Outcome, PresetChoice

CORDONED_BY = "trainy.ai/cordoned-by"
CORDON_REASON = "trainy.ai/cordon-reason"
CORDON_BUDGET_S = 60.0
CANARY_BUDGET_S = 120.0
Obj = dict[str, Any]


@defn(runbook.HUB_PREFLIGHT)
def preflight(step: EnrollmentStep) -> list[Finding]:
    """Both endpoints answer, the runbook's three permission checks, and the worker name is free."""
    c = step.contract
    findings: list[Finding] = []
    for role, target in (("hub", c.hub), ("worker", c.worker)):
        try:
            KubeObjects(target).version()
            findings.append(Finding.passed(f"{role}.endpoint", f"{target.describe()} answers"))
        except Exception as exc:
            findings.append(
                Finding.failed(
                    f"{role}.endpoint",
                    f"{target.describe()} does not answer: {exc}",
                    f"check the {role} kubeconfig and context",
                )
            )
    if not all(f.ok for f in findings):
        return findings
    hub, worker = KubeObjects(c.hub), KubeObjects(c.worker)
    checks = (
        (
            "hub.can-create-bootstrapenrollments",
            hub.can_i("create", "trainy.ai", "bootstrapenrollments", c.tenant_namespace),
            True,
            f"the Hub identity must be organization admin of {c.tenant_namespace}",
        ),
        (
            "hub.cannot-create-organizations",
            hub.can_i("create", "trainy.ai", "organizations"),
            False,
            "use the organization-admin identity, not a Trainy operator identity",
        ),
        (
            "worker.can-create-namespaces",
            worker.can_i("create", "", "namespaces"),
            True,
            "bootstrap needs cluster-admin on the worker",
        ),
    )
    for check, allowed, want, fix in checks:
        findings.append(
            Finding.verdict(
                check, allowed == want, f"answer {'yes' if allowed else 'no'}, required {'yes' if want else 'no'}", fix
            )
        )
    for kind in ("BootstrapEnrollment", "WorkerCluster"):
        plural = KINDS[kind].plural
        taken = hub.get(kind, c.worker_name, c.tenant_namespace) is not None
        findings.append(
            Finding.verdict(
                f"hub.unique-{plural}",
                not taken,
                f"{plural} {c.tenant_namespace}/{c.worker_name} {'already exists' if taken else 'is free'}",
                "pick a worker name unique in the tenant namespace, or decommission the old one",
            )
        )
    return findings


@defn(runbook.HUB_DESTROY_KEY)
def destroy_key(step: EnrollmentStep) -> bool:
    """Nothing to destroy: tenantflow holds no signing key (the blob lives only inside ``konduktor.bootstrap``).

    Still registered: every enrollment's compensation schedules it (recorded histories include it)."""
    return False


def _unregistered(hub: KubeObjects, c: WorkerEnrollment) -> ConditionReport:
    """No WorkerCluster yet: Registered=False, explained by the BootstrapEnrollment's ``status.usedAt``."""
    enrollment = hub.get("BootstrapEnrollment", c.worker_name, c.tenant_namespace)
    if enrollment is None:
        message = f"no BootstrapEnrollment {c.tenant_namespace}/{c.worker_name} and no WorkerCluster"
    else:
        used = (enrollment.get("status") or {}).get("usedAt") or ""
        message = (
            f"BootstrapEnrollment status.usedAt is {used or 'empty'}; "
            f"no WorkerCluster {c.tenant_namespace}/{c.worker_name} yet"
        )
    return ConditionReport(
        conditions={"Registered": Condition(type="Registered", status="False", reason="NotRedeemed", message=message)}
    )


def _report(hub: KubeObjects, step_contract: WorkerEnrollment) -> ConditionReport:
    wc = hub.get("WorkerCluster", step_contract.worker_name, step_contract.tenant_namespace)
    if wc is None:
        return _unregistered(hub, step_contract)
    conds = {
        c["type"]: Condition(
            type=c["type"],
            status=c["status"],
            reason=c.get("reason", ""),
            message=c.get("message", ""),
            observed_generation=c.get("observedGeneration", 0),
        )
        for c in (wc.get("status") or {}).get("conditions") or []
    }
    return ConditionReport(generation=wc["metadata"].get("generation", 1), conditions=conds)


@defn(runbook.HUB_WAIT_CONDITIONS)
def wait_conditions(wait: ConditionWait) -> ConditionReport:
    """Poll the WorkerCluster (heartbeat, backoff) until the conditions are True or the budget is spent."""
    hub = KubeObjects(wait.contract.hub)

    def converged(report: ConditionReport) -> bool:
        return all(report.true(name) for name in wait.conditions)

    def refused(report: ConditionReport) -> bool:
        configured = report.conditions.get("WorkerConfigured")
        return wait.stop_on_refusal and configured is not None and ADOPTION_REFUSAL in configured.message

    report = poll_until(
        lambda: _report(hub, wait.contract),
        lambda r: converged(r) or refused(r),
        every=growing(wait.poll_s),
        budget_s=wait.budget_s,
        detail=lambda r: r.model_dump(mode="json"),
    ).value
    if converged(report):
        return report.model_copy(update={"converged": True})
    return report.model_copy(update={"components": components(wait.contract)})


def components(c: WorkerEnrollment) -> list[str]:
    """``kubectl -n trainy-system get pods`` and ``-n trainy-byoc-system``: one line per namespace."""
    worker = KubeObjects(c.worker)
    lines = []
    for namespace in (AGENT_NAMESPACE, BYOC_NAMESPACE):
        try:
            pods = worker.list("Pod", namespace)
        except ApplicationError as err:
            lines.append(f"{namespace}: pods not readable ({err.message})")
            continue
        listed = ", ".join(f"{p['metadata']['name']} {(p.get('status') or {}).get('phase', 'Unknown')}" for p in pods)
        lines.append(f"{namespace}: {listed or 'no pods'}")
    return lines


@defn(runbook.HUB_WAIT_WORKERCLUSTER)
def wait_workercluster(wait: ConditionWait) -> bool:
    """True as soon as the WorkerCluster exists (so brownfield can cordon at once)."""
    hub, c = KubeObjects(wait.contract.hub), wait.contract
    return poll_until(
        lambda: hub.get("WorkerCluster", c.worker_name, c.tenant_namespace),
        lambda wc: wc is not None,
        every=growing(0.1, max_s=2.0),
        budget_s=wait.budget_s,
    ).done


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


@defn(runbook.HUB_CORDON)
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


def _completed(status: Obj) -> bool:
    return any(x["type"] == "Completed" and x["status"] == "True" for x in status.get("conditions") or [])


def _dispatch_ready(wc: Obj) -> bool:
    return any(
        cond["type"] == "DispatchReady" and cond["status"] == "True"
        for cond in (wc.get("status") or {}).get("conditions") or []
    )


@defn(runbook.HUB_CORDON_POOL)
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


@defn(runbook.HUB_SELECT_PRESET)
def select_preset(step: EnrollmentStep) -> EnsureResult:
    c = step.contract
    KubeObjects(c.hub).patch(
        "WorkerCluster", c.worker_name, c.tenant_namespace, {"spec": {"scheduling": {"preset": c.scheduling_preset}}}
    )
    return EnsureResult(
        layer="hub",
        kind="WorkerCluster",
        name=c.worker_name,
        namespace=c.tenant_namespace,
        outcome=Outcome.updated,
        data=PresetChoice(preset=c.scheduling_preset),
    )


CANARY_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
"""A small, pinned image that has ``sh`` and ``echo``: the canary only has to start, print a line and exit 0."""
CANARY_RESOURCES = {"cpu": "100m", "memory": "64Mi"}
"""Requests and limits of the canary's one container: a short check, not a benchmark (the runbook asks for a
short JobSet through ``user-queue`` and names no resources)."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""Kueue's label on the Workload it creates for a job, carrying the job's UID (the Workload's name is Kueue's)."""


def canary_jobset(name: str, namespace: str, queue: str = "user-queue") -> Obj:
    """The canary: one JobSet through ``queue`` whose one Job runs one pod (one container, ``restartPolicy:
    Never``, ``backoffLimit: 0``; JobSet's default failure policy restarts nothing) that prints a line and exits.
    No ``ttlSecondsAfterFinished``: on a worker it would delete the JobSet before its status syncs back to the
    Hub, which then dispatches it again (kueue PR #14952)."""
    return {
        "apiVersion": KINDS["JobSet"].api_version,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "canary",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "canary",
                                            "image": CANARY_IMAGE,
                                            "command": ["sh", "-c", f"echo tenantflow canary {namespace}/{name}"],
                                            "resources": {
                                                "requests": dict(CANARY_RESOURCES),
                                                "limits": dict(CANARY_RESOURCES),
                                            },
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def _cluster_of(hub: KubeObjects, job: Obj) -> str:
    """The worker the Hub's Kueue dispatched ``job`` to: ``status.clusterName`` of the Workload labelled with the
    job's UID (empty when the Hub does not say)."""
    meta = job["metadata"]
    for workload in hub.list("Workload", meta["namespace"], f"{JOB_UID_LABEL}={meta['uid']}"):
        cluster = (workload.get("status") or {}).get("clusterName")
        if cluster:
            return str(cluster)
    return ""


@defn(runbook.HUB_CANARY)
def canary(step: EnrollmentStep) -> Finding:
    """A short JobSet through ``user-queue`` on the Hub (:func:`canary_jobset`); it must be dispatched and
    complete."""
    c = step.contract
    hub = KubeObjects(c.hub)
    ns = c.workload_namespaces[0] if c.tenant_namespace not in c.workload_namespaces else c.tenant_namespace
    name = f"canary-{c.worker_name}"[:63]
    job = hub.get("JobSet", name, ns) or hub.create(canary_jobset(name, ns))
    run = poll_until(
        lambda: dict((hub.get("JobSet", name, ns) or {}).get("status") or {}),
        _completed,
        every=growing(0.3),
        budget_s=CANARY_BUDGET_S,
        detail=dict,
    )
    if not run.done:
        raise fail("CanaryFailed", f"canary JobSet {ns}/{name} did not complete within {CANARY_BUDGET_S:.0f} s")
    where = _cluster_of(hub, job)
    hub.delete("JobSet", name, ns)
    return Finding.passed("canary", f"canary {ns}/{name} completed" + (f" on {where}" if where else ""))


@defn(runbook.HUB_REMOVE_ENROLLMENT)
def remove_enrollment(step: EnrollmentStep) -> list[EnsureResult]:
    """``konduktor cluster decommission --yes``: the WorkerCluster and the BootstrapEnrollment (decommission, or
    compensation)."""
    c = step.contract
    out = konduktor_cli.run(c.hub, "cluster", "decommission", c.worker_name, "-n", c.tenant_namespace, "--yes")
    results = []
    for line in out.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] in ("deleted", "absent"):
            kind = {"workercluster": "WorkerCluster", "bootstrapenrollment": "BootstrapEnrollment"}.get(
                words[1], words[1]
            )
            results.append(
                EnsureResult(
                    layer="hub",
                    kind=kind,
                    name=c.worker_name,
                    namespace=c.tenant_namespace,
                    outcome=Outcome.deleted if words[0] == "deleted" else Outcome.absent,
                )
            )
    return results


ACTIVITIES = [
    preflight,
    destroy_key,
    wait_conditions,
    wait_workercluster,
    cordon,
    cordon_pool,
    select_preset,
    canary,
    remove_enrollment,
]
