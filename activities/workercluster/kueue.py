"""Kueue on a worker cluster as it really is: the served API version from discovery, and the semantic comparison
of an existing object with the scheduling preset.

:class:`Kueue` asks ``GET /apis/kueue.x-k8s.io`` which versions the worker serves (Kueue <= 0.14 serves only
``v1beta1``; 0.15+ also ``v1beta2``) and reads and writes every Kueue kind at the newest one it serves.
:func:`expected_spec` lets the worker's own API server default the preset object (a server-side dry-run create
under a scratch name), so fields the apiserver or Kueue's webhooks fill compare equal; :func:`spec_diff` then
compares field by field, quantities by value (``parse_quantity``: ``10000``, ``"10000"`` and ``"10k"`` are
equal), and names every field that really differs.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.kubeobjects import MERGE_PATCH, Kind
from tenantflow.models.targets import KubeTarget

GROUP = "kueue.x-k8s.io"
NEWEST_FIRST = ("v1beta2", "v1beta1")
PLURALS = {
    "Workload": ("workloads", True),
    "LocalQueue": ("localqueues", True),
    "ResourceFlavor": ("resourceflavors", False),
    "ClusterQueue": ("clusterqueues", False),
    "AdmissionCheck": ("admissionchecks", False),
    "ProvisioningRequestConfig": ("provisioningrequestconfigs", False),
}
DRY_RUN_SUFFIX = "-tenantflow-compare"
Obj = dict[str, Any]


def served_versions(target: KubeTarget) -> list[str]:
    """The Kueue versions the target serves (API discovery); empty when Kueue is not installed."""
    try:
        group = kubeclient.request(target, "GET", f"/apis/{GROUP}")
    except ApplicationError as err:
        if err.type == "NotFound":
            return []
        raise
    return [str(v["version"]) for v in group.get("versions") or []]


class Kueue:
    """Kueue objects of one worker at the newest version it serves."""

    def __init__(self, target: KubeTarget) -> None:
        self.target = target
        served = served_versions(target)
        self.version = next((v for v in NEWEST_FIRST if v in served), served[0] if served else "")

    @property
    def installed(self) -> bool:
        return bool(self.version)

    def kind(self, kind: str) -> Kind:
        plural, namespaced = PLURALS[kind]
        return Kind(kind, f"{GROUP}/{self.version}", plural, namespaced)

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return kubeclient.request(self.target, "GET", self.kind(kind).path(namespace, name))
        except ApplicationError as err:
            if err.type == "NotFound":
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        if not self.installed:
            return []
        query = [("labelSelector", label_selector)] if label_selector else []
        found = kubeclient.request(self.target, "GET", self.kind(kind).path(namespace), query=query)
        return list(found.get("items") or [])

    def patch(self, kind: str, name: str, namespace: str | None, body: Obj) -> Obj:
        return kubeclient.request(self.target, "PATCH", self.kind(kind).path(namespace, name), body, MERGE_PATCH)

    def expected_spec(self, preset: Obj) -> Obj:
        """The preset object's spec as this worker's API server stores it (defaults filled, quantities normalized):
        a dry-run create under a scratch name, so nothing is written."""
        meta = preset["metadata"]
        body = {
            **preset,
            "apiVersion": f"{GROUP}/{self.version}",
            "metadata": {**meta, "name": f"{meta['name']}{DRY_RUN_SUFFIX}"},
        }
        done = kubeclient.request(
            self.target, "POST", self.kind(preset["kind"]).path(meta.get("namespace")), body, query=[("dryRun", "All")]
        )
        return dict(done.get("spec") or {})


def _quantity(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return Decimal(parse_quantity(value))
    except ValueError:
        return None


def _same(want: Any, have: Any) -> bool:
    if want == have:
        return True
    a = _quantity(want)
    return a is not None and a == _quantity(have)


def spec_diff(want: Any, have: Any, where: str = "spec") -> list[str]:
    """Every field where ``have`` differs from ``want`` (``path: preset X, found Y``); quantities by value."""
    if isinstance(want, dict) and isinstance(have, dict):
        return [
            line
            for key in sorted(set(want) | set(have))
            for line in spec_diff(want.get(key), have.get(key), f"{where}.{key}")
        ]
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        return [
            line for i, (w, h) in enumerate(zip(want, have, strict=True)) for line in spec_diff(w, h, f"{where}[{i}]")
        ]
    return [] if _same(want, have) else [f"{where}: preset {want!r}, found {have!r}"]
