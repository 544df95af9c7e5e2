"""Hub-side enrollment activities (permission preflight, conditions, preset, decommission) and the layer's list.

Writes go through the ``konduktor`` CLI as the runbook documents them (:mod:`activities.common.konduktor_cli`:
``cluster decommission --yes``; the enrollment itself is ``konduktor.bootstrap``); reads and the preset go to
the explicit Hub target through :class:`activities.common.kubeobjects.KubeObjects`. Waits poll with heartbeats
and backoff. The cordons are in :mod:`activities.hub.cordon` and the canary in :mod:`activities.hub.canary`;
:data:`ACTIVITIES` lists the ``hub.*`` activities of all three.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.hub import canary as hub_canary
from tenantflow.activities.hub import cordon as hub_cordon
from tenantflow.activities.hub import enrollment_ownership
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import (
    ADOPTION_REFUSAL,
    AGENT_NAMESPACE,
    BYOC_NAMESPACE,
    Condition,
    ConditionReport,
    ConditionWait,
    EnrollmentStep,
)
from tenantflow.models.results import EnsureResult, Finding, Outcome, PresetChoice
from tenantflow.models.targets import KubeTarget


@defn(enrollment_steps.HUB_PREFLIGHT)
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
    return [*findings, cli_version(c.worker)]


def cli_version(worker: KubeTarget) -> Finding:
    """``konduktor --version`` on this worker host, refused outside ``konduktor_cli.SUPPORTED_VERSIONS``."""
    supported = konduktor_cli.supported_range()
    fix = (
        f"install a konduktor CLI {supported} on the worker host and point KONDUKTOR_BIN at it (README, "
        '"Enrolling a worker cluster"); tenantflow drives only the CLI surface of those versions'
    )
    try:
        printed, ok = konduktor_cli.version(worker)
    except ApplicationError as exc:
        return Finding.failed("konduktor.version", f"`konduktor --version` failed: {exc.message}", fix)
    return Finding.verdict(
        "konduktor.version", ok, f"`konduktor --version` printed {printed!r}; supported {supported}", fix
    )


@defn(enrollment_steps.HUB_DESTROY_KEY)
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


@defn(enrollment_steps.HUB_WAIT_CONDITIONS)
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


@defn(enrollment_steps.HUB_WAIT_WORKERCLUSTER)
def wait_workercluster(wait: ConditionWait) -> bool:
    """True as soon as the WorkerCluster exists (so brownfield can cordon at once)."""
    hub, c = KubeObjects(wait.contract.hub), wait.contract
    return poll_until(
        lambda: hub.get("WorkerCluster", c.worker_name, c.tenant_namespace),
        lambda wc: wc is not None,
        every=growing(0.1, max_s=2.0),
        budget_s=wait.budget_s,
    ).done


@defn(enrollment_steps.HUB_SELECT_PRESET)
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


@defn(enrollment_steps.HUB_REMOVE_ENROLLMENT)
def remove_enrollment(step: EnrollmentStep) -> list[EnsureResult]:
    """``konduktor cluster decommission --yes``: the WorkerCluster and the BootstrapEnrollment (decommission, or
    compensation: only this run's, :mod:`activities.hub.enrollment_ownership`)."""
    c = step.contract
    if not enrollment_ownership.removable(c):
        return [
            EnsureResult(layer="hub", kind=k, name=c.worker_name, namespace=c.tenant_namespace, outcome=Outcome.absent)
            for k in ("WorkerCluster", "BootstrapEnrollment")
        ]
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
    hub_cordon.cordon,
    hub_cordon.cordon_on_appearance,
    hub_cordon.cordon_pool,
    select_preset,
    hub_canary.canary,
    remove_enrollment,
]
