"""``worker.reset_approved``: ``konduktor worker reset`` of exactly the dry run an operator approved.

The CLI cannot reset a subset, so the approval binds by comparison: ``konduktor worker reset --dry-run`` runs again
right before the reset and must print exactly the approved text (its SHA-256; trailing whitespace aside); only then
does ``konduktor worker reset`` run. A worker that changed since (something installed or released meanwhile) is
refused with ``ResetPlanChanged`` showing the difference, and nothing is reset: the decommission goes back to its
gate with the new text. A dry run with no line that reads as an action is refused (``ResetPlanUnreadable``) and
nothing is reset. Runs recorded before the text was approved compare the ``delete`` and ``update`` (release)
entries read from the dry run instead (``worker.reset`` recomputes at apply time; runs recorded before this step
keep it).
"""

from __future__ import annotations

import difflib
import hashlib

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.registered import defn
from tenantflow.activities.workercluster.steps import reset_dry_run, reset_lines, reset_results
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_workflows import RESET_DRY_RUN, ApprovedReset, EnrollmentStep
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult


def _writes(steps: list[PlanStep]) -> set[str]:
    return {
        f"{s.action.value} {s.kind} {s.namespace + '/' if s.namespace else ''}{s.name}"
        for s in steps
        if s.action in (Action.delete, Action.update) and s.kind != RESET_DRY_RUN
    }


def _changed_entries(approved: list[PlanStep], now: list[PlanStep]) -> str | None:
    """How the deletes and releases of ``now`` differ from the approved ones (runs that approved entries)."""
    was, new = _writes(approved), _writes(now)
    if was == new:
        return None
    return (
        f"New: {', '.join(sorted(new - was)) or 'none'}; gone: {', '.join(sorted(was - new)) or 'none'}. "
        "Decommission again to approve the new plan"
    )


def _changed_text(reset: ApprovedReset, text: str) -> str | None:
    """How ``text`` differs from the approved dry run, as a diff of its lines (None: it is the approved text)."""
    if hashlib.sha256(text.encode()).hexdigest() == reset.dry_run_sha256:
        return None
    diff = difflib.unified_diff(reset.dry_run.split("\n"), text.split("\n"), "approved", "now", lineterm="", n=0)
    return "\n".join(diff) + "\nApprove the new dry run at the decommission's gate"


@defn(enrollment_steps.WORKER_RESET_APPROVED)
def reset_approved(reset: ApprovedReset) -> list[EnsureResult]:
    """Re-run the dry run; reset only when it still prints the approved text (or lists the approved entries)."""
    step = EnrollmentStep(contract=reset.contract)
    text, steps = reset_dry_run(step)
    changed = _changed_text(reset, text) if reset.dry_run_sha256 else _changed_entries(reset.steps, steps)
    if changed is not None:
        raise fail(
            "ResetPlanChanged",
            f"konduktor worker reset --dry-run no longer matches the approved plan; nothing was reset. {changed}",
        )
    return reset_results(reset_lines(step))


ACTIVITIES = [reset_approved]
