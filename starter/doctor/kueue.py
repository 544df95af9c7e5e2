"""Kueue: the API version the cluster serves against the one tenantflow writes.

API discovery of ``kueue.x-k8s.io`` (``GET /apis/kueue.x-k8s.io``,
https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api); tenantflow writes Kueue objects at
:data:`activities.common.kubeobjects.KUEUE` (``v1beta2``, served from Kueue 0.15, stored from 0.16:
https://kueue.sigs.k8s.io/docs/). A cluster without Kueue is a tenant cluster onboarding does not queue through:
skipped with the reason.
"""

from __future__ import annotations

from tenantflow.activities.common.kubeobjects import KUEUE
from tenantflow.starter.doctor.crds import served_versions
from tenantflow.starter.doctor.report import Estate, Result, failed, ok, skipped

NAME = "kueue.version"
GRANT = "get on the API discovery endpoints (/apis)"


def kueue_version(estate: Estate) -> Result:
    """``kueue.x-k8s.io`` serves the version tenantflow writes."""
    group, version = KUEUE.split("/")
    served = served_versions(estate, group)
    if not served:
        return skipped(NAME, f"{group} not served here", "no Kueue in this cluster; run doctor on the Hub and workers")
    if version not in served:
        return failed(
            NAME,
            f"{group} serves {', '.join(served)}, not {version}",
            f"upgrade Kueue to 0.15 or later (tenantflow writes {KUEUE})",
        )
    return ok(NAME, f"{group} serves {', '.join(served)}, including {version}")
