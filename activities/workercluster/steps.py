"""Worker-side enrollment activities: bootstrap plan, invariants, adoption, drain, and ``worker reset``.

The plan lists what the runbook's bootstrap results in; ``konduktor.bootstrap`` runs it. Compensation and
decommission run ``konduktor worker reset`` (``--dry-run`` first for the plan): it removes only what Konduktor
installed (``trainy.ai/installed-by=konduktor``) and releases the preset objects (their ownership labels go,
the objects stay); Kueue/JobSet objects, customer workloads, cert-manager and a shared VictoriaMetrics
operator are left. tenantflow installs nothing on the worker itself.
"""

from __future__ import annotations

import hashlib
import re

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.workercluster.invariants import invariants, verify_invariants, work_state
from tenantflow.activities.workercluster.kueue import Kueue, spec_diff
from tenantflow.activities.workercluster.versions import selected_images
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_workflows import (
    BOOTSTRAP_COMPONENTS,
    MANAGED_BY,
    ORIGIN_LABEL,
    RESET_DRY_RUN,
    SCHEDULING_MANAGER,
    VM_OPERATOR_LABEL,
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


@defn(enrollment_steps.WORKER_PLAN)
def plan(step: EnrollmentStep) -> list[PlanStep]:
    """The runbook's bootstrap, object by object: the one-shot BootstrapEnrollment on the Hub, then what
    ``konduktor worker bootstrap`` installs; a shared VictoriaMetrics operator is preserved. Each step names the
    cluster it is on (the contract's registry names): the plan hash covers the steps only, so an approval of it
    binds the clusters too, and a contract that names another cluster than its approver assumes is visible."""
    c = step.contract
    objs = KubeObjects(c.worker)
    steps = [
        PlanStep(
            layer="hub",
            kind="BootstrapEnrollment",
            name=c.worker_name,
            namespace=c.tenant_namespace,
            action=Action.create,
            detail={"one_shot": True, "by": "konduktor cluster enroll", "hub": c.hub.context},
        )
    ]
    for kind, namespace, name in BOOTSTRAP_COMPONENTS:
        action = Action.create if objs.get(kind, name, namespace) is None else Action.unchanged
        steps.append(
            PlanStep(
                layer="worker",
                kind=kind,
                name=name,
                namespace=namespace,
                action=action,
                detail={"by": "konduktor worker bootstrap", "cluster": c.worker.context},
            )
        )
    steps += [
        PlanStep(
            layer="worker",
            kind="Deployment",
            name=d["metadata"]["name"],
            namespace=d["metadata"]["namespace"],
            action=Action.leave,
            detail={"reason": "shared VictoriaMetrics operator is preserved", "cluster": c.worker.context},
        )
        for d in objs.list("Deployment", None, VM_OPERATOR_LABEL)
    ]
    return steps


def reset_lines(step: EnrollmentStep) -> list[str]:
    """``konduktor worker reset`` (no dry run: it deletes and releases), its output's lines."""
    return konduktor_cli.run(step.contract.worker, "worker", "reset").splitlines()


RESET_VERBS = {"delete": Action.delete, "release": Action.update, "leave": Action.leave, "keep": Action.leave}
KIND = re.compile(r"[A-Z][A-Za-z0-9]*")
NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def _reset_entry(line: str) -> tuple[Action, str, str, str | None, str] | None:
    """An action line of ``konduktor worker reset``, or None for other lines: ``delete|release|leave Kind ns/name
    [# why]``, or a table row ``Delete|Release|Keep Kind NAMESPACE NAME [note]`` (``-``: cluster-scoped)."""
    text, _, why = line.partition("#")
    words = text.split()
    if len(words) < 3 or words[0].lower() not in RESET_VERBS or not KIND.fullmatch(words[1]):
        return None
    if len(words) == 3:
        namespace, _, name = words[2].rpartition("/")
    else:
        namespace, name, why = words[2], words[3], " ".join(words[4:])
        namespace = "" if namespace == "-" else namespace
    if not NAME.fullmatch(name) or (namespace and not NAME.fullmatch(namespace)):
        return None
    return RESET_VERBS[words[0].lower()], words[1], name, namespace or None, why.strip()


def reset_dry_run(step: EnrollmentStep) -> tuple[str, list[PlanStep]]:
    """``konduktor worker reset --dry-run``: its text as printed but for trailing whitespace, and the plan steps
    read from it (a summary); refused (``ResetPlanUnreadable``) when no line of it reads as an action."""
    out = konduktor_cli.run(step.contract.worker, "worker", "reset", "--dry-run")
    text = "\n".join(line.rstrip() for line in out.split("\n")).rstrip()
    steps = reset_plan_steps(text.split("\n"))
    if not steps:
        printed = f"it printed:\n{text[:1000]}" if text else "it printed nothing on stdout"
        raise fail(
            "ResetPlanUnreadable",
            "`konduktor worker reset --dry-run` listed nothing tenantflow can read as an action "
            f"(delete, release, leave or keep an object), so there is no plan to approve and nothing was reset; "
            f"{printed}. Run `konduktor --context {step.contract.worker.context} worker reset --dry-run` yourself, "
            "check the CLI's version against the runbook, then reset the worker by hand as the runbook's "
            "decommission says, or decommission again once the dry run lists what it would remove",
        )
    return text, steps


def dry_run_step(step: EnrollmentStep, text: str) -> PlanStep:
    """The plan step an approval of ``text`` (the dry run, verbatim) is bound to: its text, SHA-256 and the cluster
    (registry name) it was printed for and will be reset."""
    return PlanStep(
        layer="worker",
        kind=RESET_DRY_RUN,
        name=step.contract.worker_name,
        action=Action.update,
        detail={
            "dry_run": text,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "cluster": step.contract.worker.context,
        },
    )


@defn(enrollment_steps.WORKER_RECORD_INVARIANTS)
def record_invariants(step: EnrollmentStep) -> Invariants:
    return invariants(KubeObjects(step.contract.worker), step.contract.workload_namespaces)


@defn(enrollment_steps.WORKER_CHECK_INVARIANTS)
def check_invariants(step: EnrollmentStep) -> list[Finding]:
    recorded = step.facts.invariants or Invariants()
    verify_invariants(KubeObjects(step.contract.worker), step.contract.workload_namespaces, recorded)
    return [
        Finding.passed(
            check="invariants",
            message=f"{len(recorded.workloads)} recorded workloads keep their UIDs and status",
        )
    ]


@defn(enrollment_steps.WORKER_WAIT_CONVERGENCE)
def wait_convergence(wait: ConditionWait) -> list[ObjectRef]:
    """Poll until Kueue and JobSet run the images of the versions the organization selected on the Hub,
    re-checking the invariants each time."""
    objs = KubeObjects(wait.contract.worker)
    recorded = wait.invariants or Invariants()
    wanted = selected_images(wait.contract)

    def pending() -> tuple[Invariants, list[str]]:
        now = verify_invariants(objs, wait.contract.workload_namespaces, recorded)
        images = {ref.key(): ref.image for ref in now.deployments}
        return now, [f"{key} (to {image})" for key, image in wanted.items() if images.get(key) != image]

    polled = poll_until(
        pending,
        lambda seen: not seen[1],
        every=growing(wait.poll_s),
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


@defn(enrollment_steps.WORKER_ADOPTION_DIFF)
def adoption_diff(step: EnrollmentStep) -> AdoptionDiff:
    """Compare every preset object found on the worker with the preset as the worker's API server would store it
    (at the Kueue version it serves); note foreign owners and name every field that really differs."""
    c = step.contract
    kueue = Kueue(c.worker)
    identity = label_value(c.worker_identity)
    objects, diffs, foreign = [], {}, {}
    for want in preset_objects(c.scheduling_preset, c.workload_namespaces):
        kind, name, ns = want["kind"], want["metadata"]["name"], want["metadata"].get("namespace")
        have = kueue.get(kind, name, ns)
        if have is None:
            continue
        ref = ObjectRef(kind=kind, name=name, namespace=ns, uid=have["metadata"]["uid"])
        objects.append(ref)
        owner = (have["metadata"].get("labels") or {}).get(WORKER_LABEL)
        if owner and owner != identity:
            foreign[ref.key()] = owner
        delta = spec_diff(kueue.expected_spec(want), have.get("spec") or {})
        if delta:
            diffs[ref.key()] = delta
    findings = [
        Finding.failed(
            check="adoption.foreign-owner",
            message=f"{key} is owned by WorkerCluster {owner}",
            fix="release it from the other WorkerCluster (decommission or relabel) before enrolling",
        )
        for key, owner in foreign.items()
    ]
    findings += [
        Finding.failed(
            check="adoption.spec-differs",
            message=f"{key}: " + "; ".join(lines),
            fix="do not add ownership labels: contact Trainy to express the existing policy as "
            "WorkerCluster scheduling overlays",
        )
        for key, lines in diffs.items()
    ]
    return AdoptionDiff(objects=objects, differences=diffs, foreign=foreign, findings=findings)


@defn(enrollment_steps.WORKER_ADOPT)
def adopt(step: EnrollmentStep) -> list[ObjectRef]:
    """Re-check the invariants, then label the reviewed objects as ours without recreating them; verify every
    UID is unchanged."""
    c = step.contract
    objs, kueue = KubeObjects(c.worker), Kueue(c.worker)
    identity = label_value(c.worker_identity)
    if step.facts.invariants is not None:
        verify_invariants(objs, c.workload_namespaces, step.facts.invariants)
    adopted = []
    for ref in step.facts.adoption:
        obj = kueue.patch(
            ref.kind,
            ref.name,
            ref.namespace,
            {"metadata": {"labels": {MANAGED_BY: SCHEDULING_MANAGER, WORKER_LABEL: identity}}},
        )
        if obj["metadata"]["uid"] != ref.uid:
            raise fail("AdoptionRefused", f"{ref.key()} was recreated: uid {ref.uid} -> {obj['metadata']['uid']}")
        adopted.append(ref)
    return adopted


@defn(enrollment_steps.WORKER_VERIFY_UIDS)
def verify_uids(step: EnrollmentStep) -> list[Finding]:
    kueue = Kueue(step.contract.worker)
    findings = []
    for ref in step.facts.adoption:
        obj = kueue.get(ref.kind, ref.name, ref.namespace)
        uid = obj["metadata"]["uid"] if obj else "absent"
        findings.append(Finding(check="adoption.uid", ok=uid == ref.uid, message=f"{ref.key()} uid {uid}"))
    if not all(f.ok for f in findings):
        raise fail(
            "AdoptionRefused", "adoption replaced objects: " + "; ".join(f.message for f in findings if not f.ok)
        )
    return findings


@defn(enrollment_steps.WORKER_WAIT_NO_REMOTE_WORK)
def wait_no_remote_work(wait: ConditionWait) -> bool:
    """Poll until no admitted, unfinished remote (Hub-dispatched) workload remains on the worker."""
    kueue = Kueue(wait.contract.worker)
    drained = poll_until(
        lambda: [
            f"{o['metadata']['namespace']}/{o['metadata']['name']}"
            for ns in wait.contract.workload_namespaces
            for o in kueue.list("Workload", ns, ORIGIN_LABEL)
            if work_state(o) == "Admitted"
        ],
        lambda active: not active,
        every=growing(wait.poll_s),
        budget_s=wait.budget_s,
        detail=list,
    )
    if not drained.done:
        raise fail("DrainTimeout", f"remote workloads still admitted: {', '.join(drained.value)}")
    return True


@defn(enrollment_steps.WORKER_RESET_PLAN)
def reset_plan(step: EnrollmentStep) -> list[PlanStep]:
    """``konduktor worker reset --dry-run`` as printed (the step an approval binds to), then what it deletes,
    releases and leaves as read from it."""
    text, steps = reset_dry_run(step)
    return [dry_run_step(step, text), *steps]


def reset_plan_steps(lines: list[str]) -> list[PlanStep]:
    """The plan steps of ``konduktor worker reset --dry-run`` output."""
    steps = []
    for line in lines:
        entry = _reset_entry(line)
        if entry is None:
            continue
        action, kind, name, namespace, why = entry
        detail = (
            {"release": "remove trainy.ai ownership labels; the object stays"}
            if action == Action.update
            else {"reason": why}
            if why
            else {}
        )
        steps.append(PlanStep(layer="worker", kind=kind, name=name, namespace=namespace, action=action, detail=detail))
    return steps


def reset_results(lines: list[str]) -> list[EnsureResult]:
    results = []
    for line in lines:
        entry = _reset_entry(line)
        if entry is None or entry[0] == Action.leave:
            continue
        action, kind, name, namespace, _ = entry
        if action == Action.delete:
            results.append(
                EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace, outcome=Outcome.deleted)
            )
        else:
            results.append(
                EnsureResult(
                    layer="worker",
                    kind=kind,
                    name=name,
                    namespace=namespace,
                    outcome=Outcome.updated,
                    data=PresetRelease(released=True),
                )
            )
    return results


@defn(enrollment_steps.WORKER_RESET)
def reset(step: EnrollmentStep) -> list[EnsureResult]:
    """``konduktor worker reset``: Konduktor's components go, preset objects are released, the rest stays; refused,
    like an approved reset, when its dry run reads as no action."""
    reset_dry_run(step)
    return reset_results(reset_lines(step))


ACTIVITIES = [
    plan,
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
