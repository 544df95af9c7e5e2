"""Findings from the WorkerCluster conditions, as the enroll-worker-cluster runbook's troubleshooting reads them.

:func:`troubleshoot` gives, for each awaited condition that is not True, what it means and the runbook's
remedy (plus the installed components on the worker, when the wait read them); :func:`observability` notes an
``ObservabilityIngestHealthy`` that is not True (``NoTrafficYet`` right after enrollment), which never blocks
the four enrollment conditions. Pure functions of a :class:`ConditionReport` (deterministic, workflow-safe).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_workflows import ConditionReport
    from tenantflow.models.results import Finding

OBSERVABILITY = "ObservabilityIngestHealthy"
TROUBLESHOOTING = {
    "Registered": (
        "status.usedAt of the BootstrapEnrollment is empty: the worker did not complete registration",
        "kubectl --context HUB -n NS get bootstrapenrollment WORKER -o yaml; check the bootstrap output "
        "and worker access to the Hub API",
    ),
    "Connected": (
        "the worker tunnel heartbeat is missing",
        "kubectl --context WORKER -n trainy-system logs deploy/trainy-worker-agent; check outbound access "
        "to the Hub tunnel",
    ),
    "WorkerConfigured": (
        "the worker's Kueue configuration does not match the Hub",
        "read the condition message; an adoption refusal needs the adoption review",
    ),
    "DispatchReady": (
        "the Hub cannot dispatch to this worker",
        "confirm the worker is connected, configured at the current generation and not cordoned",
    ),
}


def troubleshoot(report: ConditionReport, wanted: list[str]) -> list[Finding]:
    findings = []
    for name in wanted:
        if report.true(name):
            continue
        cond = report.conditions.get(name)
        detail = f" ({cond.reason}: {cond.message})" if cond else " (not reported)"
        what, fix = TROUBLESHOOTING[name]
        findings.append(Finding.failed(f"condition.{name}", f"{name}=False: {what}{detail}", fix))
    if findings and report.components:
        components = "installed components on the worker: " + "; ".join(report.components)
        findings.append(Finding.passed("worker.components", components))
    return findings


def observability(report: ConditionReport) -> list[Finding]:
    """``ObservabilityIngestHealthy`` not True (e.g. ``NoTrafficYet``) is noted; it never blocks the four."""
    cond = report.conditions.get(OBSERVABILITY)
    if cond is None or cond.status == "True":
        return []
    return [
        Finding(
            check=f"condition.{OBSERVABILITY}",
            ok=True,
            severity="info",
            message=f"{OBSERVABILITY}={cond.status} ({cond.reason}): does not make the four enrollment "
            "conditions false",
            fix="run a canary long enough for logs and metrics to be scraped, then verify both through the Hub",
        )
    ]
