"""The reservation operator's and the login release's APIs: served at the versions tenantflow writes.

Kubernetes API discovery (``GET /apis/<group>``, an ``APIGroup`` listing the served versions,
https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api) for the groups of the kinds
tenantflow creates through custom resources (:func:`activities.common.kubeobjects.kind_of`): ``Reservation`` and
``ReservationBinding`` at the worker's ``RESERVATION_API_VERSION``, and ``HelmRelease``.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.kubeobjects import kind_of
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "kube.crds"
GRANT = "get on the API discovery endpoints (/apis; the system:discovery ClusterRole)"
CUSTOM_KINDS = ("Reservation", "ReservationBinding", "HelmRelease")


def served_versions(estate: Estate, group: str) -> list[str]:
    """The versions of ``group`` the API server serves; none when it does not serve the group."""
    try:
        found = kubeclient.request(estate.target, "GET", f"/apis/{group}")
    except ApplicationError as exc:
        if exc.type == "NotFound":
            return []
        raise
    return [str(v["version"]) for v in found.get("versions") or []]


def operator_crds(estate: Estate) -> Result:
    """Each custom kind's group serves the version tenantflow writes it at."""
    missing: list[str] = []
    seen: list[str] = []
    for kind in CUSTOM_KINDS:
        group, version = kind_of(kind).api_version.split("/")
        served = served_versions(estate, group)
        (seen if version in served else missing).append(
            f"{kind} {group}/{version}" + ("" if version in served else f" (served: {', '.join(served) or 'none'})")
        )
    if missing:
        return failed(
            NAME,
            f"not served: {'; '.join(missing)}",
            "install the reservation operator's and the login release's CRDs at those versions (tenantflow writes "
            "these kinds there)",
        )
    return ok(NAME, f"served: {', '.join(seen)}")
