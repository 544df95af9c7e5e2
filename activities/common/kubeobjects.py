"""Plain-JSON reads and writes of Kubernetes objects by kind, on one explicit target.

:data:`KINDS` says where each kind lives in the API (group/version, plural, scope; for Konduktor's ``trainy.ai``
group only the group: the version is the one the API server's discovery prefers, asked once per object);
:class:`KubeObjects` gets, lists, creates, replaces, merge-patches and deletes them as
plain dicts over :func:`activities.common.kubeclient.request`, for built-in and custom kinds
alike (no generated models, so fields a model does not know are kept). Every layer,
the Hub and the worker cluster use it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.settings import settings
from tenantflow.models.content_types import MERGE_PATCH
from tenantflow.models.targets import KubeTarget

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """How to address one kind: its API group/version, plural and scope."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool
    discovered: bool = False
    """``api_version`` is only the group; :meth:`KubeObjects.kind` adds the version the target's discovery prefers."""

    def at(self, version: str) -> Kind:
        """This kind at ``version`` of its (discovered) group."""
        return replace(self, api_version=f"{self.api_version}/{version}", discovered=False)

    def path(self, namespace: str | None = None, name: str = "") -> str:
        """The collection (or, with ``name``, the object) URL path; a namespaced kind without a namespace lists
        across all namespaces. A name or namespace that cannot be one path segment is refused before any request
        (:func:`path_segment`), so no input can steer the request to another object."""
        if self.discovered:
            raise ValueError(f"{self.kind}: the version of {self.api_version} comes from discovery (KubeObjects.kind)")
        path_segment(name, "name")
        path_segment(namespace or "", "namespace")
        root = f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{root}{where}/{self.plural}" + (f"/{name}" if name else "")


def path_segment(value: str, field: str) -> None:
    """Refuse ``value`` as an object's name or namespace in a URL path as the API server does
    (k8s.io/apimachinery pkg/api/validation/path/name.go, ``IsValidPathSegmentName``: not ``.`` or ``..``, no ``/``
    or ``%``), and ``?`` or ``#``, which would end the path; a non-retryable error naming the value."""
    if value in (".", "..") or any(c in value for c in "/%?#"):
        raise ApplicationError(
            f"{field} {value!r} cannot be a Kubernetes object's {field}: it may not be '.' or '..' nor contain "
            "'/', '%', '?' or '#'",
            type="InvalidObjectName",
            non_retryable=True,
        )


KUEUE = "kueue.x-k8s.io/v1beta2"
RUNBOOK_RESERVATION_API = "scheduling.example.io/v1alpha1"
"""The runbook's sketch of the reservation operator's API; the worker's may differ (:func:`kind_of`)."""
TRAINY = "trainy.ai"
"""Konduktor's API group on the Hub; no public document pins its version, so it is read from discovery."""
KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Namespace", "v1", "namespaces", False),
        Kind("Node", "v1", "nodes", False),
        Kind("Pod", "v1", "pods", True),
        Kind("Secret", "v1", "secrets", True),
        Kind("Service", "v1", "services", True),
        Kind("ConfigMap", "v1", "configmaps", True),
        Kind("ServiceAccount", "v1", "serviceaccounts", True),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
        Kind("PersistentVolume", "v1", "persistentvolumes", False),
        Kind("Event", "v1", "events", True),
        Kind("ResourceQuota", "v1", "resourcequotas", True),
        Kind("LimitRange", "v1", "limitranges", True),
        Kind("Deployment", "apps/v1", "deployments", True),
        Kind("Job", "batch/v1", "jobs", True),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", False),
        Kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", False),
        Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True),
        Kind("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings", True),
        Kind("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", False),
        Kind("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
        Kind("SelfSubjectAccessReview", "authorization.k8s.io/v1", "selfsubjectaccessreviews", False),
        Kind("Reservation", RUNBOOK_RESERVATION_API, "reservations", False),
        Kind("ReservationBinding", RUNBOOK_RESERVATION_API, "reservationbindings", True),
        Kind("HelmRelease", "helm.toolkit.fluxcd.io/v2", "helmreleases", True),
        Kind("Controller", "slinky.slurm.net/v1beta1", "controllers", True),
        Kind("BootstrapEnrollment", TRAINY, "bootstrapenrollments", True, discovered=True),
        Kind("WorkerCluster", TRAINY, "workerclusters", True, discovered=True),
        Kind("Organization", TRAINY, "organizations", False, discovered=True),
        Kind("JobSet", "jobset.x-k8s.io/v1alpha2", "jobsets", True),
        Kind("Workload", KUEUE, "workloads", True),
        Kind("LocalQueue", KUEUE, "localqueues", True),
        Kind("ResourceFlavor", KUEUE, "resourceflavors", False),
        Kind("ClusterQueue", KUEUE, "clusterqueues", False),
        Kind("AdmissionCheck", KUEUE, "admissionchecks", False),
        Kind("ProvisioningRequestConfig", KUEUE, "provisioningrequestconfigs", False),
    )
}


RESERVATION_KINDS = ("Reservation", "ReservationBinding")
"""The reservation operator's kinds: the runbook says to substitute your own CRDs, so their group/version is the
worker's ``RESERVATION_API_VERSION`` (:func:`kind_of`)."""


def kind_of(kind: str) -> Kind:
    """:data:`KINDS`' entry for ``kind``, with the reservation operator's group/version as the worker configures it."""
    found = KINDS[kind]
    if kind in RESERVATION_KINDS:
        return replace(found, api_version=settings().reservation_api_version)
    return found


def _absent(err: ApplicationError) -> bool:
    return err.type == "NotFound"


class KubeObjects:
    """Plain-dict CRUD of the kinds in :data:`KINDS` on one explicit target; 404 reads as absence."""

    def __init__(self, target: KubeTarget) -> None:
        self.target = target
        self._send = partial(kubeclient.request, target)  # every request of this object goes to its target
        self._preferred: dict[str, str] = {}

    def kind(self, kind: str) -> Kind:
        """Where ``kind`` lives on this target: its :data:`KINDS` entry, at the preferred version of a discovered
        group."""
        found = kind_of(kind)
        return found.at(self.preferred_version(found.api_version)) if found.discovered else found

    def preferred_version(self, group: str) -> str:
        """The version of ``group`` this target prefers: ``GET /apis/<group>``, an ``APIGroup`` whose
        ``preferredVersion`` says it (Kubernetes API discovery,
        https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api); asked once per object. A
        target that does not serve the group fails (``ApiGroupNotServed``, not retried): it is the wrong cluster
        or Konduktor is not installed there."""
        if group not in self._preferred:
            try:
                served = self._send("GET", f"/apis/{group}")
            except ApplicationError as err:
                if _absent(err):
                    raise ApplicationError(
                        f"{self.target.describe()} serves no {group} API (GET /apis/{group}: 404)",
                        type="ApiGroupNotServed",
                        non_retryable=True,
                    ) from None
                raise
            self._preferred[group] = str(served["preferredVersion"]["version"])
        return self._preferred[group]

    @property
    def host(self) -> str:
        """The API server URL of the target."""
        return str(kubeclient.api_client(self.target).configuration.host)

    def version(self) -> Manifest:
        """``GET /version``: whether the API server answers, and with which version."""
        return self._send("GET", "/version")

    def get(self, kind: str, name: str, namespace: str | None = None) -> Manifest | None:
        try:
            return self._send("GET", self.kind(kind).path(namespace, name))
        except ApplicationError as err:
            if _absent(err):
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        query = [("labelSelector", label_selector)] if label_selector else []
        return list(self._send("GET", self.kind(kind).path(namespace), query=query).get("items") or [])

    def create(self, body: Manifest) -> Manifest:
        return self._send("POST", self.kind(body["kind"]).path((body.get("metadata") or {}).get("namespace")), body)

    def replace(self, body: Manifest) -> Manifest:
        meta = body["metadata"]
        return self._send("PUT", self.kind(body["kind"]).path(meta.get("namespace"), meta["name"]), body)

    def patch(self, kind: str, name: str, namespace: str | None, body: Manifest) -> Manifest:
        """A JSON merge patch (``None`` removes a key); the object as patched."""
        return self._send("PATCH", self.kind(kind).path(namespace, name), body, MERGE_PATCH)

    def delete(self, kind: str, name: str, namespace: str | None = None, uid: str | None = None) -> bool:
        """Delete; False when it was already gone. With ``uid``, only the object of that uid: DeleteOptions
        ``preconditions.uid`` (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/);
        another object of that name is a 409 ``Conflict``, raised."""
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}} if uid else None
        try:
            self._send("DELETE", self.kind(kind).path(namespace, name), options)
        except ApplicationError as err:
            if _absent(err):
                return False
            raise
        return True

    def delete_if_present(self, kind: str, name: str, namespace: str | None = None) -> bool:
        """Read first, so an undo that finds nothing makes no write; True when something was deleted."""
        if self.get(kind, name, namespace) is None:
            return False
        self.delete(kind, name, namespace)
        return True

    def can_i(self, verb: str, group: str, resource: str, namespace: str = "") -> bool:
        """A SelfSubjectAccessReview: may this target's identity do ``verb`` on ``resource``?"""
        review = self.create(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
                },
            }
        )
        return bool((review.get("status") or {}).get("allowed"))
