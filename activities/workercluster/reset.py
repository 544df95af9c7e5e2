"""``konduktor worker reset`` only as far as it was approved: ``worker.reset_approved`` and ``worker.uninstall``.

``worker.uninstall`` is an enrollment's compensation (a failure, a cancel, a rejected bootstrap plan before the
worker was uncordoned), which nobody approves as a reset: it runs ``konduktor worker reset --dry-run`` first and
resets only when every object the dry run deletes is one the run's approved plan created (the step's
``facts.installed``: the plan's worker creates). A worker that already carried Konduktor's components (enrolled
before, under this name or another: the plan showed them as unchanged) would lose them to a reset that removes
everything Konduktor installed, so such a dry run resets nothing and fails ``ResetBeyondThisRun`` naming them (the
rollback lists it as left over). A dry run that deletes nothing resets nothing; one tenantflow cannot read while
something the run created is still there fails ``ResetPlanUnreadable``.


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

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.registered import defn
from tenantflow.activities.workercluster.steps import reset_dry_run, reset_lines, reset_plan_steps, reset_results
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


def _ref(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


@defn(enrollment_steps.WORKER_UNINSTALL)
def uninstall(step: EnrollmentStep) -> list[EnsureResult]:
    """Compensation: ``konduktor worker reset`` only when its dry run deletes nothing but what this run's plan
    created (the module docstring); the reset's results."""
    out = konduktor_cli.run(step.contract.worker, "worker", "reset", "--dry-run")
    deletes = {
        _ref(s.kind, s.namespace, s.name) for s in reset_plan_steps(out.split("\n")) if s.action == Action.delete
    }
    created = {_ref(r.kind, r.namespace, r.name) for r in step.facts.installed}
    if deletes - created:
        raise fail(
            "ResetBeyondThisRun",
            "konduktor worker reset would also delete what this enrollment did not create: "
            f"{', '.join(sorted(deletes - created))}; nothing was reset. The worker carried Konduktor's components "
            "before this run (enrolled already?): remove what this run installed by hand, or decommission the "
            "enrollment they belong to",
        )
    if deletes:
        return reset_results(reset_lines(step))
    worker = KubeObjects(step.contract.worker)
    left = [r for r in step.facts.installed if worker.get(r.kind, r.name, r.namespace) is not None]
    if left:
        raise fail(
            "ResetPlanUnreadable",
            "konduktor worker reset --dry-run lists nothing tenantflow can read as a delete while this run's "
            f"{', '.join(_ref(r.kind, r.namespace, r.name) for r in left)} still exist; nothing was reset. Run the "
            "dry run yourself and reset by hand",
        )
    return []


ACTIVITIES = [reset_approved, uninstall]
