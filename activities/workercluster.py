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
from typing import Any

from temporalio import activity

from tenantflow.activities import enrollment_keys
from tenantflow.activities.errors import fail
from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.activities.polling import Backoff, poll_until
from tenantflow.activities.workercluster_invariants import invariants, verify_invariants, work_state
from tenantflow.activities.workercluster_objects import VM_OPERATOR, install_objects, namespace_of
from tenantflow.models.enrollment_workflows import (
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
from tenantflow.models.results import EnsureResult, Finding, Outcome, PresetRelease


@activity.defn(name="worker.plan")
def plan(step: EnrollmentStep) -> list[PlanStep]:
    objs = KubeObjects(step.contract.worker)
    steps = []
    for obj in install_objects(step):
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], namespace_of(obj)
        existing = objs.get(kind, name, namespace)
        action = Action.create if existing is None else Action.unchanged
        steps.append(
            PlanStep(
                layer="worker",
                kind=kind,
                name=name,
                namespace=namespace,
                action=action,
                detail={"component": obj["metadata"]["labels"]["trainy.ai/component"]},
            )
        )
    vm = objs.get("Deployment", VM_OPERATOR[1], VM_OPERATOR[0])
    if vm is not None:
        steps.append(
            PlanStep(
                layer="worker",
                kind="Deployment",
                name=VM_OPERATOR[1],
                namespace=VM_OPERATOR[0],
                action=Action.leave,
                detail={"reason": "shared VictoriaMetrics operator is preserved"},
            )
        )
    steps.append(
        PlanStep(
            layer="hub",
            kind="BootstrapEnrollment",
            name=step.contract.worker_name,
            namespace=step.contract.tenant_namespace,
            action=Action.create,
            detail={"one_shot": True},
        )
    )
    return steps


@activity.defn(name="worker.install")
def install(step: EnrollmentStep) -> list[EnsureResult]:
    """Create every bootstrap object that is absent; secrets get their values here, never in history."""
    c = step.contract
    objs = KubeObjects(c.worker)
    if not step.facts.key_secret:
        raise fail("Invalid", "install needs the enrollment key Secret reference")
    results = []
    for obj in install_objects(step):
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], namespace_of(obj)
        if objs.get(kind, name, namespace) is not None:
            results.append(
                EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace, outcome=Outcome.unchanged)
            )
            continue
        if name == BOOTSTRAP_SECRET:
            blob = enrollment_keys.read_blob(KubeObjects(c.hub), c.tenant_namespace, step.facts.key_secret)
            obj = {**obj, "data": {"blob": base64.b64encode(blob.encode()).decode()}}
        elif kind == "Secret":
            obj = {**obj, "data": {"token": base64.b64encode(secrets.token_bytes(32)).decode()}}
        objs.create(obj)
        results.append(EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace, outcome=Outcome.created))
    return results


def _remove(objs: KubeObjects, refs: list[tuple[str, str, str | None]]) -> list[EnsureResult]:
    """Delete objects that still carry our installed-by label; namespaces last."""
    results = []
    ordered = sorted(refs, key=lambda r: r[0] == "Namespace")
    for kind, name, namespace in ordered:
        current = objs.get(kind, name, namespace)
        if current is None or (current["metadata"].get("labels") or {}).get(INSTALLED_BY) != INSTALLER:
            continue
        objs.delete(kind, name, namespace)
        results.append(EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace, outcome=Outcome.deleted))
    return results


@activity.defn(name="worker.uninstall")
def uninstall(step: EnrollmentStep) -> list[EnsureResult]:
    """Compensation: remove what this run created and release preset objects labelled for this worker;
    objects that existed before stay."""
    objs = KubeObjects(step.contract.worker)
    created = [(r.kind, r.name, r.namespace) for r in step.facts.installed if r.outcome == Outcome.created]
    return _remove(objs, created) + _release_preset(objs, step)


@activity.defn(name="worker.record_invariants")
def record_invariants(step: EnrollmentStep) -> Invariants:
    return invariants(KubeObjects(step.contract.worker), step.contract.workload_namespaces)


@activity.defn(name="worker.check_invariants")
def check_invariants(step: EnrollmentStep) -> list[Finding]:
    recorded = step.facts.invariants or Invariants()
    verify_invariants(KubeObjects(step.contract.worker), step.contract.workload_namespaces, recorded)
    return [
        Finding(
            check="invariants",
            ok=True,
            severity="info",
            message=f"{len(recorded.workloads)} recorded workloads keep their UIDs and status",
        )
    ]


@activity.defn(name="worker.wait_convergence")
def wait_convergence(wait: ConditionWait) -> list[ObjectRef]:
    """Poll until Kueue and JobSet run the organization images, re-checking the invariants each time."""
    objs = KubeObjects(wait.contract.worker)
    recorded = wait.invariants or Invariants()

    def pending() -> tuple[Invariants, list[str]]:
        now = verify_invariants(objs, wait.contract.workload_namespaces, recorded)
        images = {ref.key(): ref.image for ref in now.deployments}
        return now, [
            f"Deployment/{ns}/{name}"
            for ns, name, image in DEPENDENCIES
            if images.get(f"Deployment/{ns}/{name}") != image
        ]

    polled = poll_until(
        pending,
        lambda seen: not seen[1],
        every=Backoff(wait.poll_s),
        budget_s=wait.budget_s,
        detail=lambda seen: seen[1],
    )
    now, left = polled.value
    if not polled.done:
        raise fail(
            "ConvergenceTimeout",
            f"Kueue/JobSet did not converge: {', '.join(left)} "
            "(check kubectl -n kueue-system rollout status deploy/kueue-controller-manager)",
        )
    return now.deployments


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
    objs = KubeObjects(c.worker)
    identity = label_value(c.worker_identity)
    objects, diffs, foreign = [], {}, {}
    for want in preset_objects(c.scheduling_preset, c.workload_namespaces):
        kind, name, ns = want["kind"], want["metadata"]["name"], namespace_of(want)
        have = objs.get(kind, name, ns)
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
    findings = [
        Finding(
            check="adoption.foreign-owner",
            ok=False,
            message=f"{key} is owned by WorkerCluster {owner}",
            fix="release it from the other WorkerCluster (decommission or relabel) before enrolling",
        )
        for key, owner in foreign.items()
    ]
    findings += [
        Finding(
            check="adoption.spec-differs",
            ok=False,
            message=f"{key}: " + "; ".join(lines),
            fix="contact Trainy to express the existing policy as WorkerCluster scheduling overlays",
        )
        for key, lines in diffs.items()
    ]
    return AdoptionDiff(objects=objects, differences=diffs, foreign=foreign, findings=findings)


@activity.defn(name="worker.adopt")
def adopt(step: EnrollmentStep) -> list[ObjectRef]:
    """Re-check the invariants, then label the reviewed objects as ours without recreating them; verify every
    UID is unchanged."""
    c = step.contract
    objs = KubeObjects(c.worker)
    identity = label_value(c.worker_identity)
    if step.facts.invariants is not None:
        verify_invariants(objs, c.workload_namespaces, step.facts.invariants)
    adopted = []
    for ref in step.facts.adoption:
        obj = objs.patch(
            ref.kind,
            ref.name,
            ref.namespace,
            {"metadata": {"labels": {MANAGED_BY: SCHEDULING_MANAGER, WORKER_LABEL: identity}}},
        )
        if obj["metadata"]["uid"] != ref.uid:
            raise fail("AdoptionRefused", f"{ref.key()} was recreated: uid {ref.uid} -> {obj['metadata']['uid']}")
        adopted.append(ref)
    return adopted


@activity.defn(name="worker.verify_uids")
def verify_uids(step: EnrollmentStep) -> list[Finding]:
    objs = KubeObjects(step.contract.worker)
    findings = []
    for ref in step.facts.adoption:
        obj = objs.get(ref.kind, ref.name, ref.namespace)
        uid = obj["metadata"]["uid"] if obj else "absent"
        findings.append(Finding(check="adoption.uid", ok=uid == ref.uid, message=f"{ref.key()} uid {uid}"))
    if not all(f.ok for f in findings):
        raise fail(
            "AdoptionRefused", "adoption replaced objects: " + "; ".join(f.message for f in findings if not f.ok)
        )
    return findings


@activity.defn(name="worker.wait_no_remote_work")
def wait_no_remote_work(wait: ConditionWait) -> bool:
    """Poll until no admitted, unfinished remote (Hub-dispatched) workload remains on the worker."""
    objs = KubeObjects(wait.contract.worker)
    drained = poll_until(
        lambda: [
            f"{o['metadata']['namespace']}/{o['metadata']['name']}"
            for ns in wait.contract.workload_namespaces
            for o in objs.list("Workload", ns, ORIGIN_LABEL)
            if work_state(o) == "Admitted"
        ],
        lambda active: not active,
        every=Backoff(wait.poll_s),
        budget_s=wait.budget_s,
        detail=list,
    )
    if not drained.done:
        raise fail("DrainTimeout", f"remote workloads still admitted: {', '.join(drained.value)}")
    return True


def _installed_refs(objs: KubeObjects) -> list[tuple[str, str, str | None]]:
    refs: list[tuple[str, str, str | None]] = []
    selector = f"{INSTALLED_BY}={INSTALLER}"
    for ns in (AGENT_NAMESPACE, BYOC_NAMESPACE):
        if objs.get("Namespace", ns) is None:
            continue
        for kind in ("Deployment", "Secret", "ServiceAccount"):
            refs += [(kind, o["metadata"]["name"], ns) for o in objs.list(kind, ns, selector)]
    for kind in ("ClusterRoleBinding", "ClusterRole", "Namespace"):
        refs += [(kind, o["metadata"]["name"], None) for o in objs.list(kind, None, selector)]
    return refs


def _owned_preset(objs: KubeObjects, step: EnrollmentStep) -> list[ObjectRef]:
    c = step.contract
    selector = f"{MANAGED_BY}={SCHEDULING_MANAGER},{WORKER_LABEL}={label_value(c.worker_identity)}"
    refs = []
    for want in preset_objects(c.scheduling_preset, c.workload_namespaces):
        kind, ns = want["kind"], namespace_of(want)
        refs += [
            ObjectRef(kind=kind, name=o["metadata"]["name"], namespace=ns, uid=o["metadata"]["uid"])
            for o in objs.list(kind, ns, selector)
            if o["metadata"]["name"] == want["metadata"]["name"]
        ]
    return refs


@activity.defn(name="worker.reset_plan")
def reset_plan(step: EnrollmentStep) -> list[PlanStep]:
    """``worker reset --dry-run``: what reset deletes, releases and leaves."""
    objs = KubeObjects(step.contract.worker)
    steps = [
        PlanStep(layer="worker", kind=k, name=n, namespace=ns, action=Action.delete)
        for k, n, ns in _installed_refs(objs)
    ]
    steps += [
        PlanStep(
            layer="worker",
            kind=r.kind,
            name=r.name,
            namespace=r.namespace,
            action=Action.update,
            detail={"release": "remove trainy.ai ownership labels; the object stays"},
        )
        for r in _owned_preset(objs, step)
    ]
    vm = objs.get("Deployment", VM_OPERATOR[1], VM_OPERATOR[0])
    if vm is not None:
        steps.append(
            PlanStep(
                layer="worker",
                kind="Deployment",
                name=VM_OPERATOR[1],
                namespace=VM_OPERATOR[0],
                action=Action.leave,
                detail={"reason": "shared VictoriaMetrics operator"},
            )
        )
    return steps


def _release_preset(objs: KubeObjects, step: EnrollmentStep) -> list[EnsureResult]:
    """Drop the ownership labels from the preset objects this WorkerCluster owns; the objects stay."""
    results = []
    for ref in _owned_preset(objs, step):
        objs.patch(ref.kind, ref.name, ref.namespace, {"metadata": {"labels": {MANAGED_BY: None, WORKER_LABEL: None}}})
        results.append(
            EnsureResult(
                layer="worker",
                kind=ref.kind,
                name=ref.name,
                namespace=ref.namespace,
                outcome=Outcome.updated,
                data=PresetRelease(released=True),
            )
        )
    return results


@activity.defn(name="worker.reset")
def reset(step: EnrollmentStep) -> list[EnsureResult]:
    """Remove what tenantflow and the agent installed (by label); release preset objects; leave the objs."""
    objs = KubeObjects(step.contract.worker)
    return _remove(objs, _installed_refs(objs)) + _release_preset(objs, step)


ACTIVITIES = [
    plan,
    install,
    uninstall,
    record_invariants,
    check_invariants,
    wait_convergence,
    adoption_diff,
    adopt,
    verify_uids,
    wait_no_remote_work,
    reset_plan,
    reset,
]
