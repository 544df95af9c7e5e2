"""``worker.reset_approved``: ``konduktor worker reset`` of exactly the dry run an operator approved.

The CLI cannot reset a subset, so the approval binds by comparison: ``konduktor worker reset --dry-run`` runs again
and its ``delete`` and ``update`` (release) entries must be the approved ones; only then does
``konduktor worker reset`` run. A worker that changed since the dry run (something installed or released
meanwhile) is refused with ``ResetPlanChanged`` naming the differences, and nothing is reset: decommission again
to approve the new plan (``worker.reset`` recomputes at apply time; runs recorded before this step keep it).
"""

from __future__ import annotations

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.registered import defn
from tenantflow.activities.workercluster.steps import reset_lines, reset_plan_steps, reset_results
from tenantflow.models import runbook
from tenantflow.models.enrollment_workflows import ApprovedReset, EnrollmentStep
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult


def _writes(steps: list[PlanStep]) -> set[str]:
    return {
        f"{s.action.value} {s.kind} {s.namespace + '/' if s.namespace else ''}{s.name}"
        for s in steps
        if s.action in (Action.delete, Action.update)
    }


@defn(runbook.WORKER_RESET_APPROVED)
def reset_approved(reset: ApprovedReset) -> list[EnsureResult]:
    """Re-run the dry run; reset only when it still lists exactly the approved deletes and releases."""
    step = EnrollmentStep(contract=reset.contract)
    approved, now = _writes(reset.steps), _writes(reset_plan_steps(reset_lines(step, dry_run=True)))
    if approved != now:
        raise fail(
            "ResetPlanChanged",
            "konduktor worker reset --dry-run no longer matches the approved plan; "
            f"nothing was reset. New: {', '.join(sorted(now - approved)) or 'none'}; gone: "
            f"{', '.join(sorted(approved - now)) or 'none'}. Decommission again to approve the new plan",
        )
    return reset_results(reset_lines(step, dry_run=False))


ACTIVITIES = [reset_approved]
