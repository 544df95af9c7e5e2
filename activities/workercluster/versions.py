"""The Kueue and JobSet images a worker converges to: the versions its organization selected on the Hub.

The runbook's worker agent "upgrades Kueue and JobSet in place to the versions selected by the organization"; the
selection is the tenant's ``Organization`` (``organizations.trainy.ai``, cluster-scoped, the one whose
``spec.namespaces`` lists the tenant namespace), read with the contract's Hub identity. A dependency the
organization selects no version of is left alone by the agent, so it is not waited for.
"""

from __future__ import annotations

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import DEPENDENCIES


def selected_images(c: WorkerEnrollment) -> dict[str, str]:
    """``Deployment/<namespace>/<name>`` -> the image of the version the tenant's Organization selected.

    ``OrganizationNotFound`` (not retried) when no Organization the Hub identity can read lists the tenant
    namespace."""
    organizations = KubeObjects(c.hub).list("Organization")
    spec = next(
        (
            o.get("spec") or {}
            for o in organizations
            if c.tenant_namespace in ((o.get("spec") or {}).get("namespaces") or [])
        ),
        None,
    )
    if spec is None:
        raise fail(
            "OrganizationNotFound",
            f"no Organization on {c.hub.describe()} lists the namespace {c.tenant_namespace}, so the Kueue and "
            "JobSet versions it selected are unknown (kubectl get organizations.trainy.ai)",
        )
    return {
        f"Deployment/{d.namespace}/{d.deployment}": d.image(str(spec[d.organization_field]))
        for d in DEPENDENCIES
        if spec.get(d.organization_field)
    }
