"""Which Hub enrollment of a worker's name an enrollment run made, so that it removes only its own.

Preflight finds the name free, but the bootstrap plan's gate may wait for hours before ``konduktor cluster
enroll`` runs, and meanwhile someone else may enroll a worker of the same name in the tenant namespace. A
compensation that then ran ``konduktor cluster decommission`` would remove that other worker's WorkerCluster and
BootstrapEnrollment. So ``konduktor.bootstrap`` refuses (``WorkerNameTaken``, before any write) while a
BootstrapEnrollment or WorkerCluster of the name is there that this workflow did not make, marks the
BootstrapEnrollment ``cluster enroll`` made with the run (annotations :data:`CREATED_ANNOTATION` and
:data:`RUN_ANNOTATION`, a JSON merge patch through the Kubernetes API as the cordon's note is), and a
``WorkerEnrollment``'s ``hub.remove_enrollment`` decommissions only an enrollment so marked by its run: with none
of the name there it runs nothing; another one fails ``NotThisRunsEnrollment`` and nothing is removed (the
rollback lists it). A WorkerCluster is the redemption of the BootstrapEnrollment of its name (the runbook's
registration), so the mark on that BootstrapEnrollment stands for both.
"""

from __future__ import annotations

from temporalio import activity

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.manifests import CREATED_ANNOTATION, RUN_ANNOTATION
from tenantflow.activities.common.runs import this_workflow
from tenantflow.models.enrollment_contract import WorkerEnrollment

ENROLLMENT_WORKFLOW = "WorkerEnrollment"
"""The workflow type whose ``hub.remove_enrollment`` is a compensation (a decommission removes what it names)."""


def run_marks() -> dict[str, str]:
    """This run's mark (call it in the activity's own context, not in a thread it starts)."""
    return {CREATED_ANNOTATION: this_workflow(), RUN_ANNOTATION: activity.info().workflow_run_id or ""}


def _marks(obj: dict[str, object] | None) -> dict[str, str]:
    meta = (obj or {}).get("metadata")
    annotations = (meta.get("annotations") if isinstance(meta, dict) else None) or {}
    return {key: str(annotations.get(key, "")) for key in (CREATED_ANNOTATION, RUN_ANNOTATION)}


def refuse_unless_ours(c: WorkerEnrollment, marks: dict[str, str]) -> None:
    """``WorkerNameTaken`` while a BootstrapEnrollment or WorkerCluster of the worker's name is there and the
    BootstrapEnrollment was not made by the workflow of ``marks`` (:func:`run_marks`; a retried attempt finds its
    own)."""
    hub = KubeObjects(c.hub)
    enrollment = hub.get("BootstrapEnrollment", c.worker_name, c.tenant_namespace)
    ours = enrollment is not None and _marks(enrollment)[CREATED_ANNOTATION] == marks[CREATED_ANNOTATION]
    if ours or (enrollment is None and hub.get("WorkerCluster", c.worker_name, c.tenant_namespace) is None):
        return
    raise fail(
        "WorkerNameTaken",
        f"a Hub enrollment {c.tenant_namespace}/{c.worker_name} that this run did not make appeared after preflight; "
        "nothing was written. Pick another worker name, or decommission that enrollment first",
    )


def mark(c: WorkerEnrollment, marks: dict[str, str]) -> None:
    """Mark the BootstrapEnrollment ``cluster enroll`` made with ``marks`` (:func:`run_marks`)."""
    KubeObjects(c.hub).patch(
        "BootstrapEnrollment", c.worker_name, c.tenant_namespace, {"metadata": {"annotations": marks}}
    )


def removable(c: WorkerEnrollment) -> bool:
    """Whether ``hub.remove_enrollment`` may run ``cluster decommission``: always in a decommission; in an enrollment
    (its compensation) when this run's BootstrapEnrollment is there, and a WorkerCluster of the name only once that
    was redeemed (the runbook's ``status.usedAt``: registration creates the WorkerCluster); False when the name is
    free (nothing to remove); ``NotThisRunsEnrollment`` for someone else's."""
    if activity.info().workflow_type != ENROLLMENT_WORKFLOW:
        return True
    hub = KubeObjects(c.hub)
    enrollment = hub.get("BootstrapEnrollment", c.worker_name, c.tenant_namespace)
    cluster = hub.get("WorkerCluster", c.worker_name, c.tenant_namespace)
    if enrollment is None and cluster is None:
        return False
    ours = enrollment is not None and _marks(enrollment) == run_marks()
    redeemed = enrollment is not None and bool((enrollment.get("status") or {}).get("usedAt"))
    if ours and (cluster is None or redeemed):
        return True
    why = (
        "its WorkerCluster exists while this run's BootstrapEnrollment was never redeemed (status.usedAt is empty)"
        if ours
        else "its BootstrapEnrollment does not carry this run's mark"
    )
    raise fail(
        "NotThisRunsEnrollment",
        f"the Hub enrollment {c.tenant_namespace}/{c.worker_name} was not made by this run ({why}); it was not "
        "decommissioned. If it is this run's after all, decommission it by hand (konduktor cluster decommission)",
    )
