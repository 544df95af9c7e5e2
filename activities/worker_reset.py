"""``worker.reset_approved``: ``worker reset`` of exactly the dry run an operator approved.

Only the plan's ``delete`` entries that still carry tenantflow's installed-by label
are deleted, and only its ``update`` (release) entries that this WorkerCluster still
owns lose the ownership labels. Whatever appeared after the dry run is left alone,
so a namespace that now holds installed objects the plan did not list is kept
(reported ``unchanged``) rather than deleted with its contents (``worker.reset``
recomputes at apply time; runs recorded before this step keep it).
"""

from __future__ import annotations

from temporalio import activity

from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.activities.workercluster import _installed_refs, _owned_preset, _remove
from tenantflow.models.enrollment_workflows import MANAGED_BY, WORKER_LABEL, ApprovedReset, EnrollmentStep
from tenantflow.models.plan import Action
from tenantflow.models.results import EnsureResult, Outcome, PresetRelease


@activity.defn(name="worker.reset_approved")
def reset_approved(reset: ApprovedReset) -> list[EnsureResult]:
    """Delete the approved deletes (ours only, namespaces last); release the approved preset objects we still own."""
    objs = KubeObjects(reset.contract.worker)
    deletes = {(s.kind, s.name, s.namespace) for s in reset.steps if s.action is Action.delete}
    unlisted = {ns for ref in _installed_refs(objs) if ref not in deletes for ns in (ref[2],) if ns}
    kept = {ref for ref in deletes if ref[0] == "Namespace" and ref[1] in unlisted}
    results = _remove(objs, sorted(deletes - kept, key=str))
    results += [
        EnsureResult(layer="worker", kind=kind, name=name, namespace=namespace, outcome=Outcome.unchanged)
        for kind, name, namespace in sorted(kept)
    ]
    approved = {(s.kind, s.name, s.namespace) for s in reset.steps if s.action is Action.update}
    for ref in _owned_preset(objs, EnrollmentStep(contract=reset.contract)):
        if (ref.kind, ref.name, ref.namespace) in approved:
            objs.patch(
                ref.kind, ref.name, ref.namespace, {"metadata": {"labels": {MANAGED_BY: None, WORKER_LABEL: None}}}
            )
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


ACTIVITIES = [reset_approved]
