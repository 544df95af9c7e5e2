"""What the lab's Konduktor (the Hub, the ``konduktor`` CLI and the worker agent) is, taken from public sources.

The lab plays the real Konduktor, so it must not take these facts from tenantflow's models: a name tenantflow
mistypes would then be mistyped in the lab too, and nothing would catch it. Each fact names where it comes from:

* the runbook: Trainy's "Enroll a worker cluster" (docs.trainy.ai), the procedure ``docs/runbooks.md`` maps to
  tenantflow's steps;
* Trainy's open-source Konduktor (``konduktor-nightly``; its ``single-clusterqueue-setup.yaml``) and Google's
  DWS manifests for the ``gke-dws`` preset's objects;
* Kubernetes' own rules (label values: ``k8s.io/apimachinery/pkg/util/validation.IsValidLabelValue``).

Where none of those says (a Secret or Deployment name the runbook does not print, the blob's format), the fact is
the stand-in's own choice, said so, and documented here as the stand-in's surface.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

Obj = dict[str, Any]

VERSION = "konduktor, version 0.4.2"
"""What ``konduktor --version`` prints: the format of Click's ``version_option`` (``<prog>, version <v>``), the
option a Click CLI such as Konduktor's answers; the number is the stand-in's own choice."""
REDEEMED = "trainy.ai/redeemed"
REFUSED = "trainy.ai/redeem-refused"
"""The marks the lab's worker agent leaves on a BootstrapEnrollment it redeemed or refused (the stand-in's bootstrap
waits for one of them, :mod:`lab.konduktor.registration`)."""
AGENT_NAMESPACE = "trainy-system"
"""Runbook, "Wait for readiness": ``kubectl -n trainy-system get pods`` lists the installed components."""
BYOC_NAMESPACE = "trainy-byoc-system"
"""Runbook, "Wait for readiness": ``kubectl -n trainy-byoc-system get pods``."""
AGENT = "trainy-worker-agent"
"""Runbook, troubleshooting ``Connected=False``: ``kubectl -n trainy-system logs deploy/trainy-worker-agent``."""

MANAGED_BY = "trainy.ai/managed-by"
"""Runbook, "Adopt existing Kueue and DWS objects": ``trainy.ai/managed-by=worker-scheduling``."""
SCHEDULING_MANAGER = "worker-scheduling"
"""Runbook, "Adopt existing Kueue and DWS objects": the value of :data:`MANAGED_BY`."""
WORKER_LABEL = "trainy.ai/worker-cluster"
"""Runbook, "Adopt existing Kueue and DWS objects": ``trainy.ai/worker-cluster="$WORKER_IDENTITY"``."""
ADOPTION_REFUSAL = "refuse to adopt existing object not owned by this WorkerCluster"
"""Runbook, "Resolve existing Kueue object ownership": what ``WorkerConfigured`` reports, verbatim."""

INSTALLED_BY = "trainy.ai/installed-by"
INSTALLER = "konduktor"
"""The stand-in's own mark (``trainy.ai/installed-by=konduktor``) on what bootstrap and its agent install, which
``worker reset`` deletes: the runbook says reset removes "Trainy-installed worker components" but not how it
finds them."""
BOOTSTRAP_SECRET = "trainy-bootstrap"
TUNNEL_SECRET = "trainy-tunnel-credentials"
LOG_COLLECTOR = "trainy-log-collector"
METRICS_AGENT = "trainy-metrics-agent"
"""The stand-in's names for what the runbook lists but does not name ("Bootstrap the worker": the worker agent,
tunnel credentials, log collector, metrics agent, and their supporting namespaces and RBAC)."""
VM_OPERATOR_LABEL = "app.kubernetes.io/name=victoria-metrics-operator"
"""The label of the VictoriaMetrics operator's Deployment in its upstream Helm chart (``victoria-metrics-operator``
uses the standard ``app.kubernetes.io/name``): the shared operator bootstrap and reset leave ("It preserves an
existing shared VictoriaMetrics operator"; "a possibly shared VictoriaMetrics operator in place")."""

BOOTSTRAP_COMPONENTS: tuple[tuple[str, str | None, str], ...] = (
    ("Namespace", None, AGENT_NAMESPACE),
    ("Namespace", None, BYOC_NAMESPACE),
    ("ServiceAccount", AGENT_NAMESPACE, AGENT),
    ("ClusterRole", None, AGENT),
    ("ClusterRoleBinding", None, AGENT),
    ("Secret", AGENT_NAMESPACE, BOOTSTRAP_SECRET),
    ("Deployment", AGENT_NAMESPACE, AGENT),
    ("Secret", AGENT_NAMESPACE, TUNNEL_SECRET),
    ("Deployment", BYOC_NAMESPACE, LOG_COLLECTOR),
    ("Deployment", BYOC_NAMESPACE, METRICS_AGENT),
)
"""(kind, namespace, name) of what the stand-in's ``worker bootstrap`` plan lists: the runbook's "worker agent,
tunnel credentials, log collector, metrics agent, and their supporting namespaces and RBAC" under the names
above."""

LABEL_VALUE_MAX = 63
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
"""Kubernetes' label value syntax (``IsValidLabelValue``, "Labels and Selectors": at most 63 characters, empty or
beginning and ending with an alphanumeric, with ``-``, ``_``, ``.`` and alphanumerics between)."""


def valid_label_value(value: str) -> bool:
    """Whether Kubernetes accepts ``value`` as a label value."""
    return len(value) <= LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(value) is not None


def worker_identity(namespace: str, worker: str) -> str:
    """The ``trainy.ai/worker-cluster`` value of a worker: the runbook's
    ``WORKER_IDENTITY="${#TENANT_NS}-${TENANT_NS}-${WORKER}"``, as is when it is a valid label value.

    The runbook prints no form for an identity a label cannot hold (a 63-character namespace and worker name
    make one of up to 130): the stand-in's Hub then labels with the identity's first 52 characters (stripped of
    ``-_.`` at the ends) and the first 10 hex digits of its SHA-256, joined by ``-`` (the digest alone when
    nothing is left), a valid label value that is the same for the same identity."""
    identity = f"{len(namespace)}-{namespace}-{worker}"
    if valid_label_value(identity):
        return identity
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    head = identity[:52].strip("-_.")
    return f"{head}-{digest}" if head else digest


def signed_claims(claims: dict[str, str]) -> bytes:
    """The bytes the stand-in's enrollment signature covers: the blob's claims as JSON with sorted keys and no
    whitespace (``json.dumps(..., sort_keys=True, separators=(",", ":"))``). The runbook documents only that the
    blob "contains a private signing key"; this canonical form is the stand-in's own."""
    return json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()


def preset_objects(preset: str, workload_namespaces: list[str]) -> list[Obj]:
    """The Kueue objects (``kueue.x-k8s.io/v1beta2``, specs only) the Hub's ``preset`` manages on a worker.

    The names are the runbook's ("Adopt existing Kueue and DWS objects": "The ``gke-dws`` preset manages this
    complete graph": ResourceFlavor ``default-flavor``, ClusterQueue ``cluster-queue``, AdmissionCheck
    ``dws-prov``, ProvisioningRequestConfig ``dws-config``, and LocalQueue ``user-queue`` in every workload
    namespace). The ClusterQueue is Trainy's public
    ``single-clusterqueue-setup.yaml`` (``namespaceSelector: {}``; quotas cpu 10000, memory 10000Gi,
    ``nvidia.com/gpu``; preemption ``reclaimWithinCohort: Any``, ``withinClusterQueue: LowerPriority``) with a
    64-GPU quota for the lab's workers; ``gke-dws`` adds GKE's DWS manifests: AdmissionCheck ``dws-prov``
    (``controllerName: kueue.x-k8s.io/provisioning-request``) naming ProvisioningRequestConfig ``dws-config``
    (``provisioningClassName: queued-provisioning.gke.io``, ``managedResources: [nvidia.com/gpu]``), which the
    ClusterQueue requires through ``admissionChecksStrategy`` (Kueue v1beta2 has no ``spec.admissionChecks``).
    Trainy's file also sets ``borrowWithinCohort`` and a ``smarter-devices/fuse`` quota; the hosted Hub's preset
    is not public, and the stand-in leaves those out."""
    kueue = "kueue.x-k8s.io/v1beta2"
    quotas: list[Obj] = [
        {"name": "cpu", "nominalQuota": 10000},
        {"name": "memory", "nominalQuota": "10000Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": 64},
    ]
    queue_spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [{"name": "default-flavor", "resources": quotas}],
            }
        ],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    }
    dws: list[Obj] = []
    if preset == "gke-dws":
        queue_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "dws-prov"}]}
        dws = [
            {
                "apiVersion": kueue,
                "kind": "AdmissionCheck",
                "metadata": {"name": "dws-prov"},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "ProvisioningRequestConfig",
                        "name": "dws-config",
                    },
                },
            },
            {
                "apiVersion": kueue,
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": "dws-config"},
                "spec": {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]},
            },
        ]
    return [
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}, "spec": {}},
        {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"}, "spec": queue_spec},
        *dws,
        *(
            {
                "apiVersion": kueue,
                "kind": "LocalQueue",
                "metadata": {"name": "user-queue", "namespace": namespace},
                "spec": {"clusterQueue": "cluster-queue"},
            }
            for namespace in workload_namespaces
        ),
    ]
