"""Hub-side enrollment activities: permission preflight, BootstrapEnrollment + blob, cordon, conditions, decommission.

All calls go to the explicit Hub target of the contract through :class:`Rest`, a
small JSON client over the ``kubernetes`` client's transport (custom kinds need
no generated models). Waits poll with heartbeats and backoff. Every cordon this
module sets records who set it (:data:`CORDONED_BY`, the run's workflow id) and
why (:data:`CORDON_REASON`); ``hub.cordon_pool`` holds the other dispatch-ready
members of the tenant's pool for an exact-routing canary and releases only the
members this run cordoned.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes.client.rest import ApiException
from temporalio import activity

from tenantflow.activities import enrollment_keys
from tenantflow.activities.errors import fail, http_error
from tenantflow.activities.kubeclient import api_client
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
from tenantflow.models.results import EnsureResult, Finding, Outcome
from tenantflow.models.targets import KubeTarget

TRAINY = "/apis/trainy.ai/v1alpha1"
MERGE = "application/merge-patch+json"
CORDONED_BY = "trainy.ai/cordoned-by"
CORDON_REASON = "trainy.ai/cordon-reason"
Obj = dict[str, Any]


def trainy_path(namespace: str, plural: str, name: str = "") -> str:
    return f"{TRAINY}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


class Rest:
    """JSON requests to one explicit target; errors map to Temporal errors, 404 reads as absence."""

    def __init__(self, target: KubeTarget) -> None:
        self.target = target
        self.api = api_client(target)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                query: list[tuple[str, str]] | None = None) -> Obj:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        _, url, headers, body, _ = self.api.param_serialize(method, path, query_params=query or [],
                                                           header_params=headers, body=body,
                                                           auth_settings=["BearerToken"])
        try:
            response = self.api.call_api(method, url, headers, body)
            response.read()
        except ApiException as exc:
            raise http_error(f"kubernetes {self.target.context}", exc.status or 0, str(exc.reason)) from None
        if response.status >= 400:
            message = json.loads(response.data or b"{}").get("message", "")
            raise http_error(f"kubernetes {self.target.context}", response.status, message)
        return dict(json.loads(response.data or b"{}"))

    def get(self, path: str) -> Obj | None:
        try:
            return self.request("GET", path)
        except Exception as exc:
            if getattr(exc, "type", "") == "NotFound":
                return None
            raise

    def list(self, path: str, selector: str = "") -> list[Obj]:
        query = [("labelSelector", selector)] if selector else []
        return list(self.request("GET", path, query=query).get("items") or [])

    def create(self, path: str, body: Obj) -> Obj:
        return self.request("POST", path, body)

    def patch(self, path: str, body: Obj) -> Obj:
        return self.request("PATCH", path, body, MERGE)

    def delete(self, path: str) -> bool:
        try:
            self.request("DELETE", path)
        except Exception as exc:
            if getattr(exc, "type", "") == "NotFound":
                return False
            raise
        return True

    def can_i(self, verb: str, group: str, resource: str, namespace: str = "") -> bool:
        review = self.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                            "namespace": namespace}}})
        return bool((review.get("status") or {}).get("allowed"))


def _finding(check: str, ok: bool, message: str, fix: str = "") -> Finding:
    return Finding(check=check, ok=ok, message=message, fix=fix if not ok else "")


@activity.defn(name="hub.preflight")
def preflight(step: EnrollmentStep) -> list[Finding]:
    """Both endpoints answer, the runbook's three permission checks, and the worker name is free."""
    c = step.contract
    findings: list[Finding] = []
    for role, target in (("hub", c.hub), ("worker", c.worker)):
        try:
            Rest(target).request("GET", "/version")
            findings.append(_finding(f"{role}.endpoint", True, f"{target.describe()} answers"))
        except Exception as exc:
            findings.append(_finding(f"{role}.endpoint", False, f"{target.describe()} does not answer: {exc}",
                                     f"check the {role} kubeconfig and context"))
    if not all(f.ok for f in findings):
        return findings
    hub, worker = Rest(c.hub), Rest(c.worker)
    checks = (
        ("hub.can-create-bootstrapenrollments", hub.can_i("create", "trainy.ai", "bootstrapenrollments",
                                                           c.tenant_namespace), True,
         f"the Hub identity must be organization admin of {c.tenant_namespace}"),
        ("hub.cannot-create-organizations", hub.can_i("create", "trainy.ai", "organizations"), False,
         "use the organization-admin identity, not a Trainy operator identity"),
        ("worker.can-create-namespaces", worker.can_i("create", "", "namespaces"), True,
         "bootstrap needs cluster-admin on the worker"),
    )
    for check, allowed, want, fix in checks:
        findings.append(_finding(check, allowed == want, f"answer {'yes' if allowed else 'no'}, "
                                 f"required {'yes' if want else 'no'}", fix))
    for plural in ("bootstrapenrollments", "workerclusters"):
        taken = hub.get(trainy_path(c.tenant_namespace, plural, c.worker_name)) is not None
        findings.append(_finding(f"hub.unique-{plural}", not taken,
                                 f"{plural} {c.tenant_namespace}/{c.worker_name} "
                                 f"{'already exists' if taken else 'is free'}",
                                 "pick a worker name unique in the tenant namespace, or decommission the old one"))
    return findings


@activity.defn(name="hub.create_enrollment")
def create_enrollment(step: EnrollmentStep) -> EnrollmentFacts:
    """Key Secret, BootstrapEnrollment and the signed blob; returns references only."""
    c = step.contract
    rest = Rest(c.hub)
    secret, public = enrollment_keys.create_key(rest, c.tenant_namespace, c.worker_name)
    path = trainy_path(c.tenant_namespace, "bootstrapenrollments", c.worker_name)
    if rest.get(path) is None:
        rest.create(trainy_path(c.tenant_namespace, "bootstrapenrollments"), {
            "apiVersion": "trainy.ai/v1alpha1", "kind": "BootstrapEnrollment",
            "metadata": {"name": c.worker_name, "namespace": c.tenant_namespace},
            "spec": {"workerName": c.worker_name, "publicKey": public, "enrollmentId": step.facts.enrollment_id,
                     "schedulingPreset": c.scheduling_preset, "workloadNamespaces": c.workload_namespaces}})
    claims = {"hub": rest.api.configuration.host, "namespace": c.tenant_namespace, "worker": c.worker_name,
              "enrollmentId": step.facts.enrollment_id}
    enrollment_keys.sign_blob(rest, c.tenant_namespace, secret, claims)
    return step.facts.model_copy(update={"key_secret": secret, "public_key": public})


@activity.defn(name="hub.destroy_key")
def destroy_key(step: EnrollmentStep) -> bool:
    """Delete the key Secret; its name follows from the worker, so a half-done create_enrollment is covered too."""
    c = step.contract
    secret = step.facts.key_secret or enrollment_keys.key_secret_name(c.worker_name)
    return enrollment_keys.destroy_key(Rest(c.hub), c.tenant_namespace, secret)


def _unregistered(rest: Rest, c: WorkerEnrollment) -> ConditionReport:
    """No WorkerCluster yet: Registered=False, explained by the BootstrapEnrollment's ``status.usedAt``."""
    enrollment = rest.get(trainy_path(c.tenant_namespace, "bootstrapenrollments", c.worker_name))
    if enrollment is None:
        message = f"no BootstrapEnrollment {c.tenant_namespace}/{c.worker_name} and no WorkerCluster"
    else:
        used = (enrollment.get("status") or {}).get("usedAt") or ""
        message = (f"BootstrapEnrollment status.usedAt is {used or 'empty'}; "
                   f"no WorkerCluster {c.tenant_namespace}/{c.worker_name} yet")
    return ConditionReport(conditions={"Registered": Condition(type="Registered", status="False",
                                                               reason="NotRedeemed", message=message)})


def _report(rest: Rest, step_contract: WorkerEnrollment) -> ConditionReport:
    wc = rest.get(trainy_path(step_contract.tenant_namespace, "workerclusters", step_contract.worker_name))
    if wc is None:
        return _unregistered(rest, step_contract)
    conds = {c["type"]: Condition(type=c["type"], status=c["status"], reason=c.get("reason", ""),
                                  message=c.get("message", ""), observed_generation=c.get("observedGeneration", 0))
             for c in (wc.get("status") or {}).get("conditions") or []}
    return ConditionReport(generation=wc["metadata"].get("generation", 1), conditions=conds)


@activity.defn(name="hub.wait_conditions")
def wait_conditions(wait: ConditionWait) -> ConditionReport:
    """Poll the WorkerCluster (heartbeat, backoff) until the conditions are True or the budget is spent."""
    rest = Rest(wait.contract.hub)
    deadline = time.monotonic() + wait.budget_s
    delay = wait.poll_s
    report = ConditionReport()
    while True:
        report = _report(rest, wait.contract)
        activity.heartbeat(report.model_dump(mode="json"))
        if all(report.true(name) for name in wait.conditions):
            return report.model_copy(update={"converged": True})
        configured = report.conditions.get("WorkerConfigured")
        if wait.stop_on_refusal and configured and ADOPTION_REFUSAL in configured.message:
            return report
        left = deadline - time.monotonic()
        if left <= 0:
            return report
        time.sleep(min(delay, left))
        delay = min(delay * 1.5, 5.0)


@activity.defn(name="hub.wait_workercluster")
def wait_workercluster(wait: ConditionWait) -> bool:
    """True as soon as the WorkerCluster exists (so brownfield can cordon at once)."""
    rest = Rest(wait.contract.hub)
    deadline = time.monotonic() + wait.budget_s
    path = trainy_path(wait.contract.tenant_namespace, "workerclusters", wait.contract.worker_name)
    while rest.get(path) is None:
        activity.heartbeat()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _set_cordon(rest: Rest, path: str, cordoned: bool, reason: str) -> None:
    """Cordon (recording who and why) or uncordon (clearing the record) one WorkerCluster."""
    who = f"tenantflow {activity.info().workflow_id}" if cordoned else None
    rest.patch(path, {"spec": {"cordoned": cordoned},
                      "metadata": {"annotations": {CORDON_REASON: reason if cordoned else None, CORDONED_BY: who}}})


@activity.defn(name="hub.cordon")
def cordon(request: Cordon) -> EnsureResult:
    c = request.contract
    rest = Rest(c.hub)
    path = trainy_path(c.tenant_namespace, "workerclusters", c.worker_name)
    wc = rest.get(path)
    if wc is None:
        return EnsureResult(layer="hub", kind="WorkerCluster", name=c.worker_name, namespace=c.tenant_namespace,
                            outcome=Outcome.absent)
    if bool((wc.get("spec") or {}).get("cordoned")) == request.cordoned:
        outcome = Outcome.unchanged
    else:
        _set_cordon(rest, path, request.cordoned, request.reason)
        outcome = Outcome.updated
    return EnsureResult(layer="hub", kind="WorkerCluster", name=c.worker_name, namespace=c.tenant_namespace,
                        outcome=outcome, data={"cordoned": request.cordoned})


def _dispatch_ready(wc: Obj) -> bool:
    return any(cond["type"] == "DispatchReady" and cond["status"] == "True"
               for cond in (wc.get("status") or {}).get("conditions") or [])


@activity.defn(name="hub.cordon_pool")
def cordon_pool(request: Cordon) -> list[EnsureResult]:
    """Exact routing: cordon every other dispatch-ready member of the tenant's pool and wait until none is
    DispatchReady; with ``cordoned=False`` uncordon exactly the members this run cordoned."""
    c = request.contract
    rest = Rest(c.hub)
    base = trainy_path(c.tenant_namespace, "workerclusters")
    me = f"tenantflow {activity.info().workflow_id}"
    results = []
    for wc in rest.list(base):
        name = wc["metadata"]["name"]
        annotations = wc["metadata"].get("annotations") or {}
        if name == c.worker_name:
            continue
        if request.cordoned and _dispatch_ready(wc) and not (wc.get("spec") or {}).get("cordoned"):
            _set_cordon(rest, f"{base}/{name}", True, request.reason)
        elif request.cordoned or annotations.get(CORDONED_BY) != me:
            continue
        else:
            _set_cordon(rest, f"{base}/{name}", False, "")
        results.append(EnsureResult(layer="hub", kind="WorkerCluster", name=name, namespace=c.tenant_namespace,
                                    outcome=Outcome.updated, data={"cordoned": request.cordoned}))
    held = {r.name for r in results} if request.cordoned else set()
    deadline = time.monotonic() + 60
    while held:
        still = [wc["metadata"]["name"] for wc in rest.list(base) if wc["metadata"]["name"] in held
                 and _dispatch_ready(wc)]
        activity.heartbeat(still)
        if not still:
            break
        if time.monotonic() > deadline:
            raise fail("CordonTimeout", f"pool members still DispatchReady after cordon: {', '.join(still)}")
        time.sleep(0.2)
    return results


@activity.defn(name="hub.select_preset")
def select_preset(step: EnrollmentStep) -> EnsureResult:
    c = step.contract
    Rest(c.hub).patch(trainy_path(c.tenant_namespace, "workerclusters", c.worker_name),
                      {"spec": {"scheduling": {"preset": c.scheduling_preset}}})
    return EnsureResult(layer="hub", kind="WorkerCluster", name=c.worker_name, namespace=c.tenant_namespace,
                        outcome=Outcome.updated, data={"preset": c.scheduling_preset})


@activity.defn(name="hub.canary")
def canary(step: EnrollmentStep) -> Finding:
    """A short JobSet through ``user-queue`` on the Hub; it must be dispatched and complete."""
    c = step.contract
    rest = Rest(c.hub)
    ns = c.workload_namespaces[0] if c.tenant_namespace not in c.workload_namespaces else c.tenant_namespace
    base = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
    name = f"canary-{c.worker_name}"[:63]
    if rest.get(f"{base}/{name}") is None:
        rest.create(base, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                           "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: "user-queue"}},
                           "spec": {"replicatedJobs": [{"name": "canary", "replicas": 1, "template": {"spec": {}}}]}})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = rest.get(f"{base}/{name}") or {}
        status = job.get("status") or {}
        done = [x for x in status.get("conditions") or [] if x["type"] == "Completed" and x["status"] == "True"]
        activity.heartbeat(status)
        if done:
            rest.delete(f"{base}/{name}")
            return _finding("canary", True, f"canary {ns}/{name} completed on {status.get('clusterContext')}")
        time.sleep(0.3)
    raise fail("CanaryFailed", f"canary JobSet {ns}/{name} did not complete within 120 s")


@activity.defn(name="hub.remove_enrollment")
def remove_enrollment(step: EnrollmentStep) -> list[EnsureResult]:
    """Delete the WorkerCluster and the BootstrapEnrollment (decommission, or compensation)."""
    c = step.contract
    rest = Rest(c.hub)
    results = []
    for kind, plural in (("WorkerCluster", "workerclusters"), ("BootstrapEnrollment", "bootstrapenrollments")):
        gone = rest.delete(trainy_path(c.tenant_namespace, plural, c.worker_name))
        results.append(EnsureResult(layer="hub", kind=kind, name=c.worker_name, namespace=c.tenant_namespace,
                                    outcome=Outcome.deleted if gone else Outcome.absent))
    return results


ACTIVITIES = [preflight, create_enrollment, destroy_key, wait_conditions, wait_workercluster, cordon, cordon_pool,
              select_preset, canary, remove_enrollment]
