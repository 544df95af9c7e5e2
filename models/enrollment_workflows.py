"""Inputs, facts and results of the ``WorkerEnrollment`` and ``WorkerDecommission`` workflows.

Also the pure data both sides agree on: the names of what bootstrap installs,
the ownership labels, and the objects of the ``gke-dws`` scheduling preset.
Facts carry references only (Secret names, public keys), never a private key.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal, NamedTuple, Self

from pydantic import ConfigDict, Field, model_validator

from tenantflow.models.base import Strict
from tenantflow.models.enrollment_contract import LABEL_VALUE, WorkerEnrollment
from tenantflow.models.gates import Approval
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import EnsureResult, Finding
from tenantflow.models.status import RunOutcome

INSTALLED_BY = "trainy.ai/installed-by"
INSTALLER = "konduktor"
"""The ``trainy.ai/installed-by`` value of everything Konduktor's bootstrap and worker agent install."""
MANAGED_BY = "trainy.ai/managed-by"
SCHEDULING_MANAGER = "worker-scheduling"
WORKER_LABEL = "trainy.ai/worker-cluster"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
AGENT_NAMESPACE = "trainy-system"
BYOC_NAMESPACE = "trainy-byoc-system"
AGENT = "trainy-worker-agent"
BOOTSTRAP_SECRET = "trainy-bootstrap"
TUNNEL_SECRET = "trainy-tunnel-credentials"
LOG_COLLECTOR = "trainy-log-collector"
METRICS_AGENT = "trainy-metrics-agent"
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
"""(kind, namespace, name) of what ``konduktor worker bootstrap`` results in, as the runbook lists it: the worker
agent, tunnel credentials, log collector, metrics agent and their namespaces and RBAC."""
VM_OPERATOR_LABEL = "app.kubernetes.io/name=victoria-metrics-operator"
ADOPTION_REFUSAL = "refuse to adopt existing object not owned by this WorkerCluster"


class Dependency(NamedTuple):
    """Kueue or JobSet on the worker: its controller Deployment, its release images and the Organization's field
    naming the version the organization selected (runbook: the worker agent "upgrades Kueue and JobSet in place
    to the versions selected by the organization")."""

    namespace: str
    deployment: str
    repository: str
    """Release images are ``<repository>:<version>`` (kueue.sigs.k8s.io "Installation"; JobSet's chart)."""
    organization_field: str
    """The ``spec`` field of the Hub's ``Organization`` (``organizations.trainy.ai``) holding the selected version;
    no public document names it: the Hub's served CRD does (``tests/lab/test_facts_agree.py`` compares the lab's
    spelling)."""

    def image(self, version: str) -> str:
        return f"{self.repository}:{version}"


DEPENDENCIES = (
    Dependency("kueue-system", "kueue-controller-manager", "registry.k8s.io/kueue/kueue", "kueueVersion"),
    Dependency("jobset-system", "jobset-controller-manager", "registry.k8s.io/jobset/jobset", "jobsetVersion"),
)

Obj = dict[str, Any]


def label_value(identity: str) -> str:
    """``identity`` if it is a valid label value, else a stable hashed form that is."""
    if len(identity) <= 63 and re.fullmatch(LABEL_VALUE, identity):
        return identity
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    prefix = identity[:52].strip("-_.")
    return f"{prefix}-{digest}" if prefix else digest


def preset_objects(preset: str, workload_namespaces: list[str]) -> list[Obj]:
    """The Kueue objects a scheduling preset manages on the worker (specs only, no labels)."""
    kueue = "kueue.x-k8s.io/v1beta2"
    cq_spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "default-flavor",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 10000},
                            {"name": "memory", "nominalQuota": "10000Gi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 64},
                        ],
                    }
                ],
            }
        ],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    }
    objs: list[Obj] = [
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}, "spec": {}}
    ]
    if preset == "gke-dws":
        cq_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "dws-prov"}]}
        objs += [
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
    objs.insert(
        1, {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"}, "spec": cq_spec}
    )
    objs += [
        {
            "apiVersion": kueue,
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": ns},
            "spec": {"clusterQueue": "cluster-queue"},
        }
        for ns in workload_namespaces
    ]
    return objs


class ObjectRef(Strict):
    kind: str
    name: str
    namespace: str | None = None
    uid: str = ""
    state: str = ""
    image: str = ""

    def key(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"


class Invariants(Strict):
    """Running work and dependency Deployments recorded before a brownfield enrollment."""

    workloads: list[ObjectRef] = Field(default_factory=list)
    deployments: list[ObjectRef] = Field(default_factory=list)


class EnrollmentFacts(Strict):
    """What earlier steps learned. The key is referenced by Secret name; only the public key travels."""

    enrollment_id: str = ""
    key_secret: str | None = None
    public_key: str | None = None
    installed: list[EnsureResult] = Field(default_factory=list)
    invariants: Invariants | None = None
    adoption: list[ObjectRef] = Field(default_factory=list)


class EnrollmentStep(Strict):
    contract: WorkerEnrollment
    facts: EnrollmentFacts = EnrollmentFacts()
    plan_gate: bool = Field(
        False,
        exclude_if=lambda gated: not gated,
        description="konduktor.bootstrap shows the CLI's plan at the run's gate (signal bootstrap_plan_printed) and "
        "answers its prompt only once that exact text is approved; False: runs recorded before, which compare "
        "the plan's components",
    )


class BootstrapPlanPrinted(Strict):
    """What ``konduktor worker bootstrap`` printed up to its prompt, as printed (the blob redacted), its SHA-256,
    and the form the blob was passed in; the bootstrap activity signals it to its run. The text is kept as it is,
    its whitespace too (a prompt often ends in a space)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)
    text: str
    sha256: str = Field(..., pattern=r"^[0-9a-f]{64}$")
    form: str = Field(..., description="how the blob was passed: the --help's file option, or the positional blob")

    @model_validator(mode="after")
    def _bound_to_its_text(self) -> Self:
        """``sha256`` must be the SHA-256 of ``text``: the run shows ``text`` at the gate and the activity answers
        the CLI by ``sha256``, so a signal pairing another text with the CLI's hash (anyone reaching Temporal can
        read the real one in the history and signal) would have an approver approve one text and the CLI answered
        for another. A payload failing this is dropped by the SDK before the run sees it."""
        if hashlib.sha256(self.text.encode()).hexdigest() != self.sha256:
            raise ValueError("sha256 is not the SHA-256 of text: a printed plan is bound to its own text")
        return self


BootstrapAnswer = Literal["waiting", "approved", "rejected"]
"""The run's answer to a printed bootstrap plan (query ``bootstrap_plan_answer`` with its SHA-256)."""


class ConditionWait(Strict):
    contract: WorkerEnrollment
    conditions: list[str]
    budget_s: float = Field(120.0, gt=0)
    poll_s: float = Field(0.5, gt=0)
    invariants: Invariants | None = None
    stop_on_refusal: bool = Field(True, description="return early when WorkerConfigured refuses adoption")


class Condition(Strict):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int = 0


class ConditionReport(Strict):
    generation: int = 0
    conditions: dict[str, Condition] = Field(default_factory=dict)
    converged: bool = False
    components: list[str] = Field(
        default_factory=list,
        description="when the conditions did not converge: the "
        "pods of trainy-system and trainy-byoc-system on the worker (the runbook's check)",
    )

    def true(self, name: str) -> bool:
        cond = self.conditions.get(name)
        return bool(cond and cond.status == "True" and cond.observed_generation == self.generation)


class AdoptionDiff(Strict):
    """The preset objects found on the worker, each compared with the preset."""

    objects: list[ObjectRef] = Field(default_factory=list)
    differences: dict[str, list[str]] = Field(default_factory=dict)
    foreign: dict[str, str] = Field(default_factory=dict, description="object -> owning worker-cluster label")
    findings: list[Finding] = Field(default_factory=list)


class EnrollmentInput(Strict):
    contract: WorkerEnrollment
    gate_escalate_after_s: int = Field(3600, ge=1)
    gate_expire_after_s: int = Field(7 * 24 * 3600, ge=1)
    condition_budget_s: float = Field(300.0, gt=0, description="how long each condition may take to converge")


class EnrollmentResult(Strict):
    worker: str
    status: RunOutcome = Field(..., description="completed, or rejected at the plan gate; a run that fails raises")
    plan_hash: str | None = None
    conditions: dict[str, Condition] = Field(default_factory=dict)
    installed: list[EnsureResult] = Field(default_factory=list)
    adopted: list[ObjectRef] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list, description="who answered which gate, when")
    message: str = ""


class DecommissionInput(Strict):
    contract: WorkerEnrollment
    gate_escalate_after_s: int = Field(3600, ge=1)
    gate_expire_after_s: int = Field(7 * 24 * 3600, ge=1)
    drain_budget_s: float = Field(600.0, gt=0)


BOOTSTRAP_PRINTED = "KonduktorBootstrapPlan"
"""The kind of the plan step holding what ``konduktor worker bootstrap`` printed up to its prompt, as printed
(``detail``: ``printed``, ``sha256``, ``form``): the plan ``approve_plan`` shows again at the bootstrap step, whose
hash covers that text, so approving it approves exactly what the CLI printed."""
RESET_DRY_RUN = "WorkerResetDryRun"
"""The kind of the reset plan's step holding ``konduktor worker reset --dry-run``'s text as printed (trailing
whitespace removed) and its SHA-256 (``detail``: ``dry_run``, ``sha256``): the plan hash covers it, so approving
the plan approves exactly that text. The plan's other worker steps are read from the text: a summary."""


class ApprovedReset(Strict):
    """``worker reset`` of exactly an approved dry run: its text and hash (runs recorded before the text was
    approved: its ``delete`` and ``update`` (release) entries)."""

    contract: WorkerEnrollment
    steps: list[PlanStep]
    dry_run: str = Field("", exclude_if=lambda text: not text, description="the approved dry run, verbatim")
    dry_run_sha256: str = Field("", exclude_if=lambda digest: not digest)

    @classmethod
    def of(cls, contract: WorkerEnrollment, plan: list[PlanStep]) -> ApprovedReset:
        """The reset of an approved plan's worker steps, bound to its dry run's text when the plan holds one."""
        shown = dry_run_of(plan)
        return cls(
            contract=contract,
            steps=[s for s in plan if s.layer == "worker" and s.kind != RESET_DRY_RUN],
            dry_run=shown.get("dry_run", ""),
            dry_run_sha256=shown.get("sha256", ""),
        )


def dry_run_of(plan: list[PlanStep]) -> dict[str, str]:
    """The ``detail`` (``dry_run``, ``sha256``) of a reset plan's :data:`RESET_DRY_RUN` step; empty when it has none
    (plans made before the text was approved)."""
    return next((s.detail for s in plan if s.kind == RESET_DRY_RUN), {})


class DecommissionResult(Strict):
    worker: str
    status: RunOutcome
    plan_hash: str | None = None
    plan: Plan | None = None
    removed: list[EnsureResult] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list, description="who answered which gate, when")


def signed_claims(claims: dict[str, str]) -> bytes:
    """The exact bytes an enrollment signature covers: canonical JSON of the blob's claims."""
    return json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()


class Cordon(Strict):
    contract: WorkerEnrollment
    cordoned: bool
    reason: str = Field("", max_length=200)
