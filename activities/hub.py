"""Hub-side enrollment activities: permission preflight, BootstrapEnrollment + blob, cordon, conditions, decommission.

All calls go to the explicit Hub target of the contract through
:class:`activities.kubeobjects.KubeObjects`. Waits poll with heartbeats and backoff. Every cordon this
module sets records who set it (:data:`CORDONED_BY`, the run's workflow id) and
why (:data:`CORDON_REASON`); ``hub.cordon_pool`` holds the other dispatch-ready
members of the tenant's pool for an exact-routing canary and releases only the
members this run cordoned.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from tenantflow.activities import enrollment_keys
from tenantflow.activities.errors import fail
from tenantflow.activities.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.polling import Backoff, poll_until
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import (
    ADOPTION_REFUSAL,
    QUEUE_LABEL,
    Condition,
    ConditionReport,
    ConditionWait,
    Cordon,
    EnrollmentFacts,
    EnrollmentStep,
)
from tenantflow.models.results import CordonState, EnsureResult, Finding, Outcome, PresetChoice

CORDONED_BY = "trainy.ai/cordoned-by"
CORDON_REASON = "trainy.ai/cordon-reason"
CORDON_BUDGET_S = 60.0
CANARY_BUDGET_S = 120.0
Obj = dict[str, Any]


def _finding(check: str, ok: bool, message: str, fix: str = "") -> Finding:
    return Finding(check=check, ok=ok, message=message, fix=fix if not ok else "")


@activity.defn(name="hub.preflight")
def preflight(step: EnrollmentStep) -> list[Finding]:
    """Both endpoints answer, the runbook's three permission checks, and the worker name is free."""
    c = step.contract
    findings: list[Finding] = []
    for role, target in (("hub", c.hub), ("worker", c.worker)):
        try:
            KubeObjects(target).version()
            findings.append(_finding(f"{role}.endpoint", True, f"{target.describe()} answers"))
        except Exception as exc:
            findings.append(
                _finding(
                    f"{role}.endpoint",
                    False,
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
            _finding(
                check, allowed == want, f"answer {'yes' if allowed else 'no'}, required {'yes' if want else 'no'}", fix
            )
        )
    for kind in ("BootstrapEnrollment", "WorkerCluster"):
        plural = KINDS[kind].plural
        taken = hub.get(kind, c.worker_name, c.tenant_namespace) is not None
        findings.append(
            _finding(
                f"hub.unique-{plural}",
                not taken,
                f"{plural} {c.tenant_namespace}/{c.worker_name} {'already exists' if taken else 'is free'}",
                "pick a worker name unique in the tenant namespace, or decommission the old one",
            )
        )
    return findings


@activity.defn(name="hub.create_enrollment")
def create_enrollment(step: EnrollmentStep) -> EnrollmentFacts:
    """Key Secret, BootstrapEnrollment and the signed blob; returns references only."""
    c = step.contract
    hub = KubeObjects(c.hub)
    secret, public = enrollment_keys.create_key(hub, c.tenant_namespace, c.worker_name)
    if hub.get("BootstrapEnrollment", c.worker_name, c.tenant_namespace) is None:
        hub.create(
            {
                "apiVersion": "trainy.ai/v1alpha1",
                "kind": "BootstrapEnrollment",
                "metadata": {"name": c.worker_name, "namespace": c.tenant_namespace},
                "spec": {
                    "workerName": c.worker_name,
                    "publicKey": public,
                    "enrollmentId": step.facts.enrollment_id,
                    "schedulingPreset": c.scheduling_preset,
                    "workloadNamespaces": c.workload_namespaces,
                },
            }
        )
    claims = {
        "hub": hub.host,
        "namespace": c.tenant_namespace,
        "worker": c.worker_name,
        "enrollmentId": step.facts.enrollment_id,
    }
    enrollment_keys.sign_blob(hub, c.tenant_namespace, secret, claims)
    return step.facts.model_copy(update={"key_secret": secret, "public_key": public})


@activity.defn(name="hub.destroy_key")
def destroy_key(step: EnrollmentStep) -> bool:
    """Delete the key Secret; its name follows from the worker, so a half-done create_enrollment is covered too."""
    c = step.contract
    secret = step.facts.key_secret or enrollment_keys.key_secret_name(c.worker_name)
    return enrollment_keys.destroy_key(KubeObjects(c.hub), c.tenant_namespace, secret)


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


@activity.defn(name="hub.wait_conditions")
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
        every=Backoff(wait.poll_s, 1.5, 5.0),
        budget_s=wait.budget_s,
        detail=lambda r: r.model_dump(mode="json"),
    ).value
    return report.model_copy(update={"converged": True}) if converged(report) else report


@activity.defn(name="hub.wait_workercluster")
def wait_workercluster(wait: ConditionWait) -> bool:
    """True as soon as the WorkerCluster exists (so brownfield can cordon at once)."""
    hub, c = KubeObjects(wait.contract.hub), wait.contract
    return poll_until(
        lambda: hub.get("WorkerCluster", c.worker_name, c.tenant_namespace),
        lambda wc: wc is not None,
        every=Backoff(0.1),
        budget_s=wait.budget_s,
    ).done


def _set_cordon(hub: KubeObjects, namespace: str, name: str, cordoned: bool, reason: str) -> None:
    """Cordon (recording who and why) or uncordon (clearing the record) one WorkerCluster."""
    who = f"tenantflow {activity.info().workflow_id}" if cordoned else None
    hub.patch(
        "WorkerCluster",
        name,
        namespace,
        {
            "spec": {"cordoned": cordoned},
            "metadata": {"annotations": {CORDON_REASON: reason if cordoned else None, CORDONED_BY: who}},
        },
    )


@activity.defn(name="hub.cordon")
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
        _set_cordon(hub, c.tenant_namespace, c.worker_name, request.cordoned, request.reason)
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


@activity.defn(name="hub.cordon_pool")
def cordon_pool(request: Cordon) -> list[EnsureResult]:
    """Exact routing: cordon every other dispatch-ready member of the tenant's pool and wait until none is
    DispatchReady; with ``cordoned=False`` uncordon exactly the members this run cordoned."""
    c = request.contract
    hub = KubeObjects(c.hub)
    me = f"tenantflow {activity.info().workflow_id}"
    results = []
    for wc in hub.list("WorkerCluster", c.tenant_namespace):
        name = wc["metadata"]["name"]
        annotations = wc["metadata"].get("annotations") or {}
        if name == c.worker_name:
            continue
        if request.cordoned and _dispatch_ready(wc) and not (wc.get("spec") or {}).get("cordoned"):
            _set_cordon(hub, c.tenant_namespace, name, True, request.reason)
        elif request.cordoned or annotations.get(CORDONED_BY) != me:
            continue
        else:
            _set_cordon(hub, c.tenant_namespace, name, False, "")
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
        every=Backoff(0.2),
        budget_s=CORDON_BUDGET_S,
        detail=list,
    )
    if not quiet.done:
        raise fail("CordonTimeout", f"pool members still DispatchReady after cordon: {', '.join(quiet.value)}")
    return results


@activity.defn(name="hub.select_preset")
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


@activity.defn(name="hub.canary")
def canary(step: EnrollmentStep) -> Finding:
    """A short JobSet through ``user-queue`` on the Hub; it must be dispatched and complete."""
    c = step.contract
    hub = KubeObjects(c.hub)
    ns = c.workload_namespaces[0] if c.tenant_namespace not in c.workload_namespaces else c.tenant_namespace
    name = f"canary-{c.worker_name}"[:63]
    if hub.get("JobSet", name, ns) is None:
        hub.create(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: "user-queue"}},
                "spec": {"replicatedJobs": [{"name": "canary", "replicas": 1, "template": {"spec": {}}}]},
            }
        )
    run = poll_until(
        lambda: dict((hub.get("JobSet", name, ns) or {}).get("status") or {}),
        _completed,
        every=Backoff(0.3),
        budget_s=CANARY_BUDGET_S,
        detail=dict,
    )
    if not run.done:
        raise fail("CanaryFailed", f"canary JobSet {ns}/{name} did not complete within {CANARY_BUDGET_S:.0f} s")
    hub.delete("JobSet", name, ns)
    return _finding("canary", True, f"canary {ns}/{name} completed on {run.value.get('clusterContext')}")


@activity.defn(name="hub.remove_enrollment")
def remove_enrollment(step: EnrollmentStep) -> list[EnsureResult]:
    """Delete the WorkerCluster and the BootstrapEnrollment (decommission, or compensation)."""
    c = step.contract
    hub = KubeObjects(c.hub)
    results = []
    for kind in ("WorkerCluster", "BootstrapEnrollment"):
        gone = hub.delete(kind, c.worker_name, c.tenant_namespace)
        results.append(
            EnsureResult(
                layer="hub",
                kind=kind,
                name=c.worker_name,
                namespace=c.tenant_namespace,
                outcome=Outcome.deleted if gone else Outcome.absent,
            )
        )
    return results


ACTIVITIES = [
    preflight,
    create_enrollment,
    destroy_key,
    wait_conditions,
    wait_workercluster,
    cordon,
    cordon_pool,
    select_preset,
    canary,
    remove_enrollment,
]
