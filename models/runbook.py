"""The tenant runbook's steps and the catalogue of every step the workflows run, defined once.

The steps of TenantOnboarding and TenantOffboarding (preflight, plan, apply, smoke, validate, handover, record,
and their undo in rollback order), of TenantChange, TenantDrift, TenantRecords and TenantLifecycle are defined
here as :class:`~models.step.Step` entries; the sequences (preflight, plan, apply, smoke, rollback order) are
defined here too, and the workflows, ``tenantflow plan``, the bench's direct run and the test fakes all drive
these tables. :data:`CATALOGUE` joins them with the enrollment runs' steps (:mod:`models.enrollment_steps`):
the worker registers exactly the activities it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tenantflow.models.drift import DriftReport, DriftTarget, FleetDriftInput
from tenantflow.models.enrollment_steps import ENROLLMENT
from tenantflow.models.gates import GateNotice
from tenantflow.models.lifecycle import NoticeSent, TenantRunSeen, TenantRunWait, TermNotice
from tenantflow.models.offboarding import JobsToCancel
from tenantflow.models.onboarding import Handover, StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.records import (
    LatestContract,
    RecordedTenant,
    RecordKey,
    RecordsQuery,
    StoredRecord,
    TenantRecord,
    WorkerRecordQuery,
    WorkerRecordReport,
)
from tenantflow.models.results import EnsureResult
from tenantflow.models.step import STEP_TIMEOUT, WAIT_HEARTBEAT, Step
from tenantflow.models.tenant_hold import TenantHolder

LONG_TIMEOUT = timedelta(minutes=15)
SMOKE_TIMEOUT = timedelta(minutes=30)


def _preflight(layer: str) -> Step[StepInput, StepResult]:
    return Step(f"{layer}.preflight", StepInput, StepResult, summary=f"{layer}: read-only preflight", local=True)


def _plan(layer: str) -> Step[StepInput, list[PlanStep]]:
    return Step(f"{layer}.plan", StepInput, list[PlanStep], summary=f"{layer}: plan", local=True)


def _undo(layer: str) -> Step[UndoInput, list[EnsureResult]]:
    return Step(f"{layer}.undo", UndoInput, list[EnsureResult], summary=f"{layer}: undo one applied step")


@dataclass(frozen=True)
class LayerSteps:
    """A tenant layer's steps besides its apply steps: the plan it reads and the undo its saga runs."""

    plan: Step[StepInput, list[PlanStep]]
    undo: Step[UndoInput, list[EnsureResult]]


@dataclass(frozen=True)
class LayerWithPreflight(LayerSteps):
    """The steps of a layer that also checks its system, read-only, before anything is planned (all but login)."""

    preflight: Step[StepInput, StepResult]


def _layer(layer: str) -> LayerSteps:
    return LayerSteps(plan=_plan(layer), undo=_undo(layer))


def _layer_with_preflight(layer: str) -> LayerWithPreflight:
    return LayerWithPreflight(plan=_plan(layer), undo=_undo(layer), preflight=_preflight(layer))


def _apply(
    name: str, summary: str, kinds: tuple[str, ...] = (), timeout: timedelta = STEP_TIMEOUT
) -> Step[StepInput, StepResult]:
    undo = {u.layer: u for u in ROLLBACK}[name.partition(".")[0]]
    return Step(name, StepInput, StepResult, summary=summary, timeout=timeout, kinds=kinds, undo=undo)


def _smoke(name: str, summary: str) -> Step[StepInput, StepResult]:
    return Step(name, StepInput, StepResult, summary=summary, timeout=SMOKE_TIMEOUT)


# --- TenantOnboarding and TenantOffboarding ---------------------------------------------------------------------

CAPACITY = _layer_with_preflight("capacity")
"""Its preflight comes first: it also chooses the nodes (``facts.nodes``) every later step uses."""
IDENTITY = _layer_with_preflight("identity")
KUBE = _layer_with_preflight("kube")
SLURM = _layer_with_preflight("slurm")
STORAGE = _layer_with_preflight("storage")
LOGIN = _layer("login")
PREFLIGHT = (CAPACITY.preflight, IDENTITY.preflight, KUBE.preflight, SLURM.preflight, STORAGE.preflight)
PLAN = (CAPACITY.plan, IDENTITY.plan, KUBE.plan, SLURM.plan, STORAGE.plan, LOGIN.plan)
ROLLBACK = (LOGIN.undo, SLURM.undo, KUBE.undo, CAPACITY.undo, STORAGE.undo, IDENTITY.undo)
"""The undo activities in the runbook's rollback order: the login release first, then Slurm (cheap), Kubernetes,
the Reservation, Weka, and Authentik last (most disruptive)."""

CAPACITY_RESERVATION = _apply("capacity.reservation", "create the Reservation of the chosen nodes", ("Reservation",))
CAPACITY_WAIT_RESERVATION = _apply(
    "capacity.wait_reservation", "wait until the operator labels exactly the chosen nodes", timeout=LONG_TIMEOUT
)
IDENTITY_GROUP = _apply("identity.group", "create the Authentik group", ("Group",))
IDENTITY_USERS = _apply("identity.users", "create the Authentik users with SSH keys", ("User",))
IDENTITY_VERIFY_LDAP = _apply(
    "identity.verify_ldap", "verify every user through the LDAP outpost", timeout=LONG_TIMEOUT
)
KUBE_NAMESPACE = _apply("kube.namespace", "create the namespace with pod-security labels", ("Namespace",))
KUBE_QUOTA = _apply("kube.quota", "create the ResourceQuota and LimitRange", ("ResourceQuota", "LimitRange"))
KUBE_BINDING = _apply("kube.binding", "create the ReservationBinding", ("ReservationBinding",))
KUBE_NETWORK_POLICY = _apply("kube.network_policy", "create the deny-all and allow NetworkPolicies", ("NetworkPolicy",))
KUBE_RBAC = _apply("kube.rbac", "bind the tenant admins group", ("RoleBinding",))
SLURM_ACCOUNTS = _apply("slurm.accounts", "add the Slurm account hierarchy", ("account",))
SLURM_QOS = _apply("slurm.qos", "add the QoS and bind them to the account", ("qos", "account-qos"))
SLURM_USERS = _apply("slurm.users", "add the per-user associations", ("user",))
SLURM_PARTITION = _apply("slurm.partition", "add the partition and reconfigure slurmctld", ("partition",))
STORAGE_FILESYSTEMS = _apply(
    "storage.filesystems",
    "create the Weka org and filesystems or tenant directories",
    ("WekaOrganization", "WekaFilesystem", "WekaDirectory"),
)
STORAGE_QUOTAS = _apply("storage.quotas", "set the /home and /scratch quotas", ("WekaQuota",))
STORAGE_CSI = _apply(
    "storage.csi",
    "create the CSI Secret, StorageClass and PVC",
    ("Secret", "StorageClass", "PersistentVolumeClaim"),
)
LOGIN_RELEASE = _apply("login.release", "deploy the login pod release", ("Secret", "HelmRelease"), timeout=LONG_TIMEOUT)
LOGIN_VERIFY = _apply("login.verify", "check getent, authorized_keys and sinfo on the login pod")
APPLY: tuple[Step[StepInput, StepResult], ...] = (
    CAPACITY_RESERVATION,
    CAPACITY_WAIT_RESERVATION,
    IDENTITY_GROUP,
    IDENTITY_USERS,
    IDENTITY_VERIFY_LDAP,
    KUBE_NAMESPACE,
    KUBE_QUOTA,
    KUBE_BINDING,
    KUBE_NETWORK_POLICY,
    KUBE_RBAC,
    SLURM_ACCOUNTS,
    SLURM_QOS,
    SLURM_USERS,
    SLURM_PARTITION,
    STORAGE_FILESYSTEMS,
    STORAGE_QUOTAS,
    STORAGE_CSI,
    LOGIN_RELEASE,
    LOGIN_VERIFY,
)
"""The apply steps in runbook order; each one's results go on the saga."""
DATA_STEPS = frozenset((STORAGE_FILESYSTEMS, STORAGE_QUOTAS))
"""Steps whose objects hold the tenant's data: offboarding keeps them unless purge_data is confirmed."""

SMOKE_SINGLE_NODE = _smoke("smoke.single_node", "single-node GPU job sees exactly one GPU")
SMOKE_NCCL = _smoke("smoke.nccl", "2-node NCCL all-reduce reaches the tier busbw")
SMOKE_STORAGE = _smoke("smoke.storage", "write and read /scratch on the Weka mount")
SMOKE: tuple[Step[StepInput, StepResult], ...] = (SMOKE_SINGLE_NODE, SMOKE_NCCL, SMOKE_STORAGE)
VALIDATE: Step[StepInput, StepResult] = Step("validate.all", StepInput, StepResult, summary="validate every layer")
HANDOVER: Step[StepInput, Handover] = Step(
    "handover.render", StepInput, Handover, summary="render the handover sheet", local=True
)

RECORD_TENANT: Step[TenantRecord, StoredRecord] = Step(
    "records.tenant", TenantRecord, StoredRecord, summary="store the tenant record in its cluster"
)

SLURM_JOBS = Step(
    "slurm.jobs", StepInput, list[PlanStep], summary="slurm: the tenant's running and pending jobs", local=True
)
"""An offboarding's plan reads the jobs of the tenant's accounts: each is a ``delete`` line of kind ``job``."""
CANCEL_TIMEOUT = timedelta(minutes=10)
SLURM_CANCEL_JOBS = Step(
    "slurm.cancel_jobs",
    JobsToCancel,
    StepResult,
    summary="cancel the tenant's jobs and wait until none is left",
    timeout=CANCEL_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
)
"""Before an offboarding removes anything: sacctmgr refuses to delete an account or user that has active jobs."""

ONBOARDING: tuple[Step[Any, Any], ...] = (
    *PREFLIGHT,
    *PLAN,
    *APPLY,
    *SMOKE,
    VALIDATE,
    HANDOVER,
    RECORD_TENANT,
    *ROLLBACK,
    SLURM_JOBS,
    SLURM_CANCEL_JOBS,
)
"""Every activity of TenantOnboarding and TenantOffboarding (offboarding uses a subset, and the last two alone)."""

# --- TenantChange (it also runs onboarding's plan, apply, validate, handover and record steps) ---------------------

CHANGE_UNDO = _undo("change")
DRAIN_TIMEOUT = timedelta(days=7)
"""How long a change waits for the jobs on the nodes it releases (it heartbeats meanwhile)."""


def _change(short: str, summary: str, **options: Any) -> Step[StepInput, StepResult]:
    return Step(f"change.{short}", StepInput, StepResult, summary=summary, **options)


CHANGE_PREFLIGHT = _change("preflight", "choose the nodes after the change; jobs holding what it removes")
CHANGE_PLAN = Step("change.plan", StepInput, list[PlanStep], summary="plan the users removed and the nodes released")
DRAIN_NODES = _change("drain", "drain the nodes the tenant gives back", kinds=("Node",), undo=CHANGE_UNDO)
WAIT_DRAINED = _change(
    "wait_drained", "wait until no job runs on the drained nodes", timeout=DRAIN_TIMEOUT, heartbeat=WAIT_HEARTBEAT
)
RELEASE_NODES = _change("release_nodes", "resume the nodes the tenant no longer holds")
REMOVE_USERS = _change("remove_users", "remove the users the contract drops (homes kept)", undo=CHANGE_UNDO)
CHANGE: tuple[Step[Any, Any], ...] = (
    CHANGE_PREFLIGHT,
    CHANGE_PLAN,
    DRAIN_NODES,
    WAIT_DRAINED,
    RELEASE_NODES,
    REMOVE_USERS,
    CHANGE_UNDO,
)
"""The activities only TenantChange runs."""
UNDO_ORDER: tuple[Step[UndoInput, list[EnsureResult]], ...] = (CHANGE_UNDO, *ROLLBACK)
"""The order a saga unwinds in: a change's own steps first (its users back, its drains lifted), then the runbook's."""

# --- TenantDrift ----------------------------------------------------------------------------------------------------

DRIFT_TENANTS: Step[FleetDriftInput, list[str]] = Step(
    "drift.tenants", FleetDriftInput, list[str], summary="the onboarded tenants' slugs, from their records"
)
DRIFT_TENANT: Step[DriftTarget, DriftReport] = Step(
    "drift.tenant", DriftTarget, DriftReport, summary="compare one tenant with its recorded contract"
)
DRIFT: tuple[Step[Any, Any], ...] = (DRIFT_TENANTS, DRIFT_TENANT)
"""Every activity of TenantDrift: both only read."""

# --- TenantRecords ---------------------------------------------------------------------------------------------------

READ_TENANT_RECORDS: Step[RecordsQuery, list[RecordedTenant]] = Step(
    "records.read_tenants",
    RecordsQuery,
    list[RecordedTenant],
    summary="read the tenants' current records",
    local=True,
)
READ_WORKER_RECORD: Step[WorkerRecordQuery, WorkerRecordReport] = Step(
    "records.read_worker",
    WorkerRecordQuery,
    WorkerRecordReport,
    summary="read an enrolled worker's current record",
    local=True,
)
RECORD_READS: tuple[Step[Any, Any], ...] = (READ_TENANT_RECORDS, READ_WORKER_RECORD)
"""Every activity of TenantRecords and WorkerClusterRecords: they only read."""

# --- TenantLifecycle ----------------------------------------------------------------------------------------------

REMINDER_DAYS: Step[str, list[int]] = Step(
    "lifecycle.reminder_days", str, list[int], summary="read the worker's reminder offsets (days before the end)"
)
NOTIFY: Step[TermNotice, NoticeSent] = Step(
    "lifecycle.notify", TermNotice, NoticeSent, summary="post a term notice to the notifier webhook"
)

TENANT_RUN_WAIT = timedelta(hours=1)
"""How long an expiring lifecycle waits for a running onboarding or change of its tenant before it offboards."""
WAIT_TENANT_RUN: Step[TenantRunWait, TenantRunSeen] = Step(
    "lifecycle.wait_tenant_run",
    TenantRunWait,
    TenantRunSeen,
    timeout=TENANT_RUN_WAIT + STEP_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
    summary="wait while the tenant's onboarding or change runs (bounded)",
)
LATEST_TENANT: Step[RecordKey, LatestContract] = Step(
    "records.latest_tenant", RecordKey, LatestContract, summary="read the contract of the tenant's latest record"
)

LIFECYCLE: tuple[Step[Any, Any], ...] = (REMINDER_DAYS, NOTIFY, WAIT_TENANT_RUN, LATEST_TENANT)
"""Every activity of TenantLifecycle."""

# --- The tenant's hold (one run per tenant) ------------------------------------------------------------------------

TENANT_HOLDER: Step[str, TenantHolder] = Step(
    "records.tenant_holder",
    str,
    TenantHolder,
    summary="ask which run holds the tenant (its hold's parent) and whether it still runs",
    timeout=timedelta(seconds=30),
    heartbeat=None,
    local=True,
)
"""A run whose claim of the tenant's hold failed asks this (``workflows/tenant_hold.py``): two reads of Temporal."""
HOLD: tuple[Step[Any, Any], ...] = (TENANT_HOLDER,)
"""Every activity of claiming a tenant's hold (TenantOnboarding, TenantChange, TenantOffboarding)."""

# --- Every gated workflow --------------------------------------------------------------------------------------

GATE_NOTIFY: Step[GateNotice, NoticeSent] = Step(
    "gates.notify",
    GateNotice,
    NoticeSent,
    summary="post a gate notification to the notifier webhook",
    timeout=timedelta(seconds=15),
    heartbeat=None,
)
"""A gate opened, its expiry is near or it escalated: one short POST (``TENANTFLOW_HTTP_TIMEOUT``) per attempt.
Gated workflows run it as a local activity (``workflows/gate_waits.py`` says why), bounded as a whole there."""

GATES: tuple[Step[Any, Any], ...] = (GATE_NOTIFY,)
"""The activities every gated workflow may run at its gates (``workflows/gate_waits.py``)."""

CATALOGUE: dict[str, Step[Any, Any]] = {
    step.name: step for step in (*ONBOARDING, *CHANGE, *ENROLLMENT, *DRIFT, *RECORD_READS, *LIFECYCLE, *HOLD, *GATES)
}
"""Every step by activity name: the worker registers exactly these activities."""
