"""Worker-side enrollment activities: install plan and bootstrap, invariants, adoption, canary checks, reset.

Everything bootstrap installs carries ``trainy.ai/installed-by=tenantflow``;
compensation and ``worker reset`` remove only such objects (namespaces
``trainy-system`` and ``trainy-byoc-system`` with their contents, cluster-scoped
RBAC). Kueue/JobSet objects, customer workloads, cert-manager and a shared
VictoriaMetrics operator are left; preset objects lose the ownership labels
(orphaned, not deleted). The enrollment blob reaches the worker by reference:
the install reads it from the Hub's key Secret.
"""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any

from temporalio import activity

from tenantflow.activities import enrollment_keys
from tenantflow.activities.errors import fail
from tenantflow.activities.hub import Rest
from tenantflow.models.enrollment_workflows import (
    AGENT,
    AGENT_NAMESPACE,
    BOOTSTRAP_SECRET,
    BYOC_NAMESPACE,
    DEPENDENCIES,
    INSTALLED_BY,
    INSTALLER,
    MANAGED_BY,
    ORIGIN_LABEL,
    SCHEDULING_MANAGER,
    WORKER_LABEL,
    AdoptionDiff,
    ConditionWait,
    EnrollmentStep,
    Invariants,
    ObjectRef,
    label_value,
    preset_objects,
)
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome

Obj = dict[str, Any]
PLURALS = {"Namespace": "namespaces", "Secret": "secrets", "ServiceAccount": "serviceaccounts",
           "Deployment": "deployments", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
           "ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "AdmissionCheck": "admissionchecks",
           "ProvisioningRequestConfig": "provisioningrequestconfigs", "LocalQueue": "localqueues",
           "JobSet": "jobsets", "Job": "jobs", "Workload": "workloads"}
API_VERSIONS = {"Namespace": "v1", "Secret": "v1", "ServiceAccount": "v1", "Deployment": "apps/v1",
                "ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
                "JobSet": "jobset.x-k8s.io/v1alpha2", "Job": "batch/v1", "Workload": "kueue.x-k8s.io/v1beta2",
                **{k: "kueue.x-k8s.io/v1beta2" for k in ("ResourceFlavor", "ClusterQueue", "AdmissionCheck",
                                                         "ProvisioningRequestConfig", "LocalQueue")}}
VM_OPERATOR = ("victoria-metrics", "victoria-metrics-operator")


def path(kind: str, namespace: str | None = None, name: str = "") -> str:
    version = API_VERSIONS[kind]
    root = f"/api/{version}" if version == "v1" else f"/apis/{version}"
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"{root}{where}/{PLURALS[kind]}" + (f"/{name}" if name else "")


def _labels(step: EnrollmentStep, component: str) -> dict[str, str]:
    return {INSTALLED_BY: INSTALLER, "trainy.ai/component": component,
            WORKER_LABEL: label_value(step.contract.worker_identity)}


def _deployment(namespace: str, name: str, image: str, labels: dict[str, str]) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"serviceAccountName": AGENT,
                                           "containers": [{"name": name, "image": image}]}}}}


def install_objects(step: EnrollmentStep) -> list[Obj]:
    """What bootstrap installs, in order, without secret values."""
    def labels(component: str) -> dict[str, str]:
        return _labels(step, component)

    def meta(name: str, component: str, namespace: str | None = None) -> Obj:
        return {"name": name, **({"namespace": namespace} if namespace else {}), "labels": labels(component)}

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(AGENT_NAMESPACE, "agent")},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(BYOC_NAMESPACE, "observability")},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(AGENT, "agent", AGENT_NAMESPACE)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(AGENT, "rbac"),
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(AGENT, "rbac"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT},
         "subjects": [{"kind": "ServiceAccount", "name": AGENT, "namespace": AGENT_NAMESPACE}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": meta("trainy-tunnel-credentials", "tunnel", AGENT_NAMESPACE)},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": meta(BOOTSTRAP_SECRET, "bootstrap", AGENT_NAMESPACE)},
        _deployment(AGENT_NAMESPACE, AGENT, "ghcr.io/trainy-ai/worker-agent:v1", labels("agent")),
        _deployment(BYOC_NAMESPACE, "trainy-log-collector", "ghcr.io/trainy-ai/log-collector:v1",
                    labels("log-collector")),
        _deployment(BYOC_NAMESPACE, "trainy-metrics-agent", "ghcr.io/trainy-ai/vmagent:v1",
                    labels("metrics-agent")),
    ]


def _ns(obj: Obj) -> str | None:
    return obj["metadata"].get("namespace")


@activity.defn(name="worker.plan")
def plan(step: EnrollmentStep) -> list[PlanStep]:
    rest = Rest(step.contract.worker)
    steps = []
    for obj in install_objects(step):
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], _ns(obj)
        existing = rest.get(path(kind, namespace, name))
        action = Action.create if existing is None else Action.unchanged
        steps.append(PlanStep(layer="worker", kind=kind, name=name, namespace=namespace, action=action,
                              detail={"component": obj["metadata"]["labels"]["trainy.ai/component"]}))
    vm = rest.get(path("Deployment", *VM_OPERATOR))
    if vm is not None:
        steps.append(PlanStep(layer="worker", kind="Deployment", name=VM_OPERATOR[1], namespace=VM_OPERATOR[0],
                              action=Action.leave, detail={"reason": "shared VictoriaMetrics operator is preserved"}))
    steps.append(PlanStep(layer="hub", kind="BootstrapEnrollment", name=step.contract.worker_name,
                          namespace=step.contract.tenant_namespace, action=Action.create,
                          detail={"one_shot": True}))
    return steps


@activity.defn(name="worker.install")
def install(step: EnrollmentStep) -> list[EnsureResult]:
    """Create every bootstrap object that is absent; secrets get their values here, never in history."""
    c = step.contract
    rest = Rest(c.worker)
    if not step.facts.key_secret:
        raise fail("Invalid", "install needs the enrollment key Secret reference")
    results = []
    for obj in install_objects(step):
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], _ns(obj)
        if rest.get(path(kind, namespace, name)) is not None:
            results.append(EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace,
                                        outcome=Outcome.unchanged))
            continue
        if name == BOOTSTRAP_SECRET:
            blob = enrollment_keys.read_blob(Rest(c.hub), c.tenant_namespace, step.facts.key_secret)
            obj = {**obj, "data": {"blob": base64.b64encode(blob.encode()).decode()}}
        elif kind == "Secret":
            obj = {**obj, "data": {"token": base64.b64encode(secrets.token_bytes(32)).decode()}}
        rest.create(path(kind, namespace), obj)
        results.append(EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace,
                                    outcome=Outcome.created))
    return results


def _remove(rest: Rest, refs: list[tuple[str, str, str | None]]) -> list[EnsureResult]:
    """Delete objects that still carry our installed-by label; namespaces last."""
    results = []
    ordered = sorted(refs, key=lambda r: r[0] == "Namespace")
    for kind, name, namespace in ordered:
        current = rest.get(path(kind, namespace, name))
        if current is None or (current["metadata"].get("labels") or {}).get(INSTALLED_BY) != INSTALLER:
            continue
        rest.delete(path(kind, namespace, name))
        results.append(EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace,
                                    outcome=Outcome.deleted))
    return results


@activity.defn(name="worker.uninstall")
def uninstall(step: EnrollmentStep) -> list[EnsureResult]:
    """Compensation: remove what this run created and release preset objects labelled for this worker;
    objects that existed before stay."""
    rest = Rest(step.contract.worker)
    created = [(r.kind, r.name, r.namespace) for r in step.facts.installed if r.outcome == Outcome.created]
    return _remove(rest, created) + _release_preset(rest, step)


def _state(obj: Obj) -> str:
    status = obj.get("status") or {}
    conds = {c["type"]: c["status"] for c in status.get("conditions") or []}
    for terminal in ("Finished", "Completed", "Failed"):
        if conds.get(terminal) == "True":
            return terminal
    if obj["kind"] == "Workload":
        return "Admitted" if conds.get("Admitted") == "True" else "Pending"
    if obj["kind"] == "Job":
        return "Running" if status.get("active") and status.get("ready") else "NotReady"
    return "Running"


def _invariants(rest: Rest, namespaces: list[str]) -> Invariants:
    work = []
    for ns in sorted(set(namespaces) | {"default"}):
        for kind in ("JobSet", "Job", "Workload"):
            for obj in rest.list(path(kind, ns)):
                if _state(obj) in ("Finished", "Completed", "Failed"):
                    continue
                work.append(ObjectRef(kind=kind, name=obj["metadata"]["name"], namespace=ns,
                                      uid=obj["metadata"]["uid"], state=_state(obj)))
    deps = []
    for ns, name, _ in DEPENDENCIES:
        dep = rest.get(path("Deployment", ns, name))
        if dep is not None:
            deps.append(ObjectRef(kind="Deployment", name=name, namespace=ns, uid=dep["metadata"]["uid"],
                                  image=dep["spec"]["template"]["spec"]["containers"][0]["image"],
                                  state=str((dep.get("status") or {}).get("readyReplicas", 0))))
    return Invariants(workloads=work, deployments=deps)


@activity.defn(name="worker.record_invariants")
def record_invariants(step: EnrollmentStep) -> Invariants:
    return _invariants(Rest(step.contract.worker), step.contract.workload_namespaces)


def _compare(recorded: Invariants, now: Invariants) -> list[str]:
    current = {ref.key(): ref for ref in now.workloads}
    changes = []
    for ref in recorded.workloads:
        seen = current.get(ref.key())
        if seen is None:
            changes.append(f"{ref.key()} disappeared")
        elif (seen.uid, seen.state) != (ref.uid, ref.state):
            changes.append(f"{ref.key()} changed: uid {ref.uid}->{seen.uid}, state {ref.state}->{seen.state}")
    deps = {ref.key(): ref for ref in now.deployments}
    changes += [f"{ref.key()} was recreated (uid {ref.uid} -> {deps[ref.key()].uid})"
                for ref in recorded.deployments if ref.key() in deps and deps[ref.key()].uid != ref.uid]
    return changes


def _verify(rest: Rest, step_namespaces: list[str], recorded: Invariants) -> Invariants:
    now = _invariants(rest, step_namespaces)
    changes = _compare(recorded, now)
    if changes:
        raise fail("InvariantBroken", "running work changed during enrollment; the worker stays cordoned: "
                   + "; ".join(changes))
    return now


@activity.defn(name="worker.check_invariants")
def check_invariants(step: EnrollmentStep) -> list[Finding]:
    recorded = step.facts.invariants or Invariants()
    _verify(Rest(step.contract.worker), step.contract.workload_namespaces, recorded)
    return [Finding(check="invariants", ok=True, severity="info",
                    message=f"{len(recorded.workloads)} recorded workloads keep their UIDs and status")]


@activity.defn(name="worker.wait_convergence")
def wait_convergence(wait: ConditionWait) -> list[ObjectRef]:
    """Poll until Kueue and JobSet run the organization images, re-checking the invariants each time."""
    rest = Rest(wait.contract.worker)
    recorded = wait.invariants or Invariants()
    deadline = time.monotonic() + wait.budget_s
    while True:
        now = _verify(rest, wait.contract.workload_namespaces, recorded)
        images = {ref.key(): ref.image for ref in now.deployments}
        pending = [f"Deployment/{ns}/{name}" for ns, name, image in DEPENDENCIES
                   if images.get(f"Deployment/{ns}/{name}") != image]
        activity.heartbeat(pending)
        if not pending:
            return now.deployments
        if time.monotonic() > deadline:
            raise fail("ConvergenceTimeout", f"Kueue/JobSet did not converge: {', '.join(pending)} "
                       "(check kubectl -n kueue-system rollout status deploy/kueue-controller-manager)")
        time.sleep(wait.poll_s)


def _spec_diff(want: Any, have: Any, where: str = "spec") -> list[str]:
    if isinstance(want, dict) and isinstance(have, dict):
        out = []
        for key in sorted(set(want) | set(have)):
            out += _spec_diff(want.get(key), have.get(key), f"{where}.{key}")
        return out
    return [] if want == have else [f"{where}: preset {want!r}, found {have!r}"]


@activity.defn(name="worker.adoption_diff")
def adoption_diff(step: EnrollmentStep) -> AdoptionDiff:
    """Compare every preset object found on the worker with the preset; note foreign owners."""
    c = step.contract
    rest = Rest(c.worker)
    identity = label_value(c.worker_identity)
    objects, diffs, foreign = [], {}, {}
    for want in preset_objects(c.scheduling_preset, c.workload_namespaces):
        kind, name, ns = want["kind"], want["metadata"]["name"], _ns(want)
        have = rest.get(path(kind, ns, name))
        if have is None:
            continue
        ref = ObjectRef(kind=kind, name=name, namespace=ns, uid=have["metadata"]["uid"])
        objects.append(ref)
        owner = (have["metadata"].get("labels") or {}).get(WORKER_LABEL)
        if owner and owner != identity:
            foreign[ref.key()] = owner
        delta = _spec_diff(want["spec"], have.get("spec") or {})
        if delta:
            diffs[ref.key()] = delta
    findings = [Finding(check="adoption.foreign-owner", ok=False, message=f"{key} is owned by WorkerCluster {owner}",
                        fix="release it from the other WorkerCluster (decommission or relabel) before enrolling")
                for key, owner in foreign.items()]
    findings += [Finding(check="adoption.spec-differs", ok=False, message=f"{key}: " + "; ".join(lines),
                         fix="contact Trainy to express the existing policy as WorkerCluster scheduling overlays")
                 for key, lines in diffs.items()]
    return AdoptionDiff(objects=objects, differences=diffs, foreign=foreign, findings=findings)


@activity.defn(name="worker.adopt")
def adopt(step: EnrollmentStep) -> list[ObjectRef]:
    """Re-check the invariants, then label the reviewed objects as ours without recreating them; verify every
    UID is unchanged."""
    c = step.contract
    rest = Rest(c.worker)
    identity = label_value(c.worker_identity)
    if step.facts.invariants is not None:
        _verify(rest, c.workload_namespaces, step.facts.invariants)
    adopted = []
    for ref in step.facts.adoption:
        obj = rest.patch(path(ref.kind, ref.namespace, ref.name),
                         {"metadata": {"labels": {MANAGED_BY: SCHEDULING_MANAGER, WORKER_LABEL: identity}}})
        if obj["metadata"]["uid"] != ref.uid:
            raise fail("AdoptionRefused", f"{ref.key()} was recreated: uid {ref.uid} -> {obj['metadata']['uid']}")
        adopted.append(ref)
    return adopted


@activity.defn(name="worker.verify_uids")
def verify_uids(step: EnrollmentStep) -> list[Finding]:
    rest = Rest(step.contract.worker)
    findings = []
    for ref in step.facts.adoption:
        obj = rest.get(path(ref.kind, ref.namespace, ref.name))
        uid = obj["metadata"]["uid"] if obj else "absent"
        findings.append(Finding(check="adoption.uid", ok=uid == ref.uid, message=f"{ref.key()} uid {uid}"))
    if not all(f.ok for f in findings):
        raise fail("AdoptionRefused", "adoption replaced objects: "
                   + "; ".join(f.message for f in findings if not f.ok))
    return findings


@activity.defn(name="worker.wait_no_remote_work")
def wait_no_remote_work(wait: ConditionWait) -> bool:
    """Poll until no admitted, unfinished remote (Hub-dispatched) workload remains on the worker."""
    rest = Rest(wait.contract.worker)
    deadline = time.monotonic() + wait.budget_s
    while True:
        active = [f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                  for ns in wait.contract.workload_namespaces
                  for o in rest.list(path("Workload", ns), ORIGIN_LABEL)
                  if _state(o) == "Admitted"]
        activity.heartbeat(active)
        if not active:
            return True
        if time.monotonic() > deadline:
            raise fail("DrainTimeout", f"remote workloads still admitted: {', '.join(active)}")
        time.sleep(wait.poll_s)


def _installed_refs(rest: Rest) -> list[tuple[str, str, str | None]]:
    refs: list[tuple[str, str, str | None]] = []
    selector = f"{INSTALLED_BY}={INSTALLER}"
    for ns in (AGENT_NAMESPACE, BYOC_NAMESPACE):
        if rest.get(path("Namespace", None, ns)) is None:
            continue
        for kind in ("Deployment", "Secret", "ServiceAccount"):
            refs += [(kind, o["metadata"]["name"], ns) for o in rest.list(path(kind, ns), selector)]
    for kind in ("ClusterRoleBinding", "ClusterRole", "Namespace"):
        refs += [(kind, o["metadata"]["name"], None) for o in rest.list(path(kind), selector)]
    return refs


def _owned_preset(rest: Rest, step: EnrollmentStep) -> list[ObjectRef]:
    c = step.contract
    selector = f"{MANAGED_BY}={SCHEDULING_MANAGER},{WORKER_LABEL}={label_value(c.worker_identity)}"
    refs = []
    for want in preset_objects(c.scheduling_preset, c.workload_namespaces):
        kind, ns = want["kind"], _ns(want)
        refs += [ObjectRef(kind=kind, name=o["metadata"]["name"], namespace=ns, uid=o["metadata"]["uid"])
                 for o in rest.list(path(kind, ns), selector) if o["metadata"]["name"] == want["metadata"]["name"]]
    return refs


@activity.defn(name="worker.reset_plan")
def reset_plan(step: EnrollmentStep) -> list[PlanStep]:
    """``worker reset --dry-run``: what reset deletes, releases and leaves."""
    rest = Rest(step.contract.worker)
    steps = [PlanStep(layer="worker", kind=k, name=n, namespace=ns, action=Action.delete)
             for k, n, ns in _installed_refs(rest)]
    steps += [PlanStep(layer="worker", kind=r.kind, name=r.name, namespace=r.namespace, action=Action.update,
                       detail={"release": "remove trainy.ai ownership labels; the object stays"})
              for r in _owned_preset(rest, step)]
    vm = rest.get(path("Deployment", *VM_OPERATOR))
    if vm is not None:
        steps.append(PlanStep(layer="worker", kind="Deployment", name=VM_OPERATOR[1], namespace=VM_OPERATOR[0],
                              action=Action.leave, detail={"reason": "shared VictoriaMetrics operator"}))
    return steps


def _release_preset(rest: Rest, step: EnrollmentStep) -> list[EnsureResult]:
    """Drop the ownership labels from the preset objects this WorkerCluster owns; the objects stay."""
    results = []
    for ref in _owned_preset(rest, step):
        rest.patch(path(ref.kind, ref.namespace, ref.name),
                   {"metadata": {"labels": {MANAGED_BY: None, WORKER_LABEL: None}}})
        results.append(EnsureResult(layer="worker", kind=ref.kind, name=ref.name, namespace=ref.namespace,
                                    outcome=Outcome.updated, data={"released": True}))
    return results


@activity.defn(name="worker.reset")
def reset(step: EnrollmentStep) -> list[EnsureResult]:
    """Remove what tenantflow and the agent installed (by label); release preset objects; leave the rest."""
    rest = Rest(step.contract.worker)
    return _remove(rest, _installed_refs(rest)) + _release_preset(rest, step)


ACTIVITIES = [plan, install, uninstall, record_invariants, check_invariants, wait_convergence, adoption_diff, adopt,
              verify_uids, wait_no_remote_work, reset_plan, reset]
