"""The steps of WorkerEnrollment and WorkerDecommission: the Hub's, konduktor's and the worker cluster's activities.

Each :class:`~models.step.Step` names an activity of the enrollment runs as Temporal records it, with its
input and result types (the payloads of :mod:`models.enrollment_workflows`) and timeouts; the waits heartbeat.
:data:`ENROLLMENT` is every step the worker registers for these runs, :data:`RETIRED` the names that only
replayed histories still schedule. :data:`models.runbook.CATALOGUE` joins them with the tenant runs' steps.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tenantflow.models.enrollment_workflows import (
    AdoptionDiff,
    ApprovedReset,
    ConditionReport,
    ConditionWait,
    Cordon,
    EnrollmentFacts,
    EnrollmentStep,
    Invariants,
    ObjectRef,
)
from tenantflow.models.plan import PlanStep
from tenantflow.models.records import StoredRecord, WorkerClusterRecord
from tenantflow.models.results import EnsureResult, Finding
from tenantflow.models.step import WAIT_HEARTBEAT, Step

WAIT_TIMEOUT = timedelta(minutes=30)
"""Start-to-close timeout of the enrollment's waits (conditions, the WorkerCluster, convergence, a drain)."""

HUB_PREFLIGHT = Step("hub.preflight", EnrollmentStep, list[Finding], summary="preflight")
HUB_CREATE_ENROLLMENT = Step(
    "hub.create_enrollment",
    EnrollmentStep,
    EnrollmentFacts,
    summary="retired: BootstrapEnrollment + signed blob (now konduktor.bootstrap)",
)
HUB_DESTROY_KEY = Step(
    "hub.destroy_key", EnrollmentStep, bool, summary="destroy the signing key (a no-op: tenantflow holds none now)"
)
KONDUKTOR_BOOTSTRAP = Step(
    "konduktor.bootstrap",
    EnrollmentStep,
    list[EnsureResult],
    timeout=timedelta(days=31),
    heartbeat=WAIT_HEARTBEAT,
    summary="konduktor cluster enroll + worker bootstrap (the blob stays in this step)",
)
"""It holds the CLI at its prompt while the run's gate waits for the printed plan's approval (the gate's expiry or a
cancel ends it first), hence a month to close; a crashed worker shows within its heartbeat timeout."""
HUB_WAIT_CONDITIONS = Step(
    "hub.wait_conditions",
    ConditionWait,
    ConditionReport,
    timeout=WAIT_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
    summary="wait for WorkerCluster conditions",
)
HUB_WAIT_WORKERCLUSTER = Step(
    "hub.wait_workercluster",
    ConditionWait,
    bool,
    timeout=WAIT_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
    summary="wait for the WorkerCluster",
)
HUB_CORDON = Step("hub.cordon", Cordon, EnsureResult, summary="cordon or uncordon")
HUB_CORDON_ON_APPEARANCE = Step(
    "hub.cordon_on_appearance",
    ConditionWait,
    EnsureResult,
    timeout=WAIT_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
    summary="cordon the WorkerCluster as soon as it appears (beside bootstrap)",
)
HUB_CORDON_POOL = Step(
    "hub.cordon_pool",
    Cordon,
    list[EnsureResult],
    timeout=timedelta(minutes=2),
    heartbeat=WAIT_HEARTBEAT,
    summary="cordon or uncordon the other pool members",
)
HUB_SELECT_PRESET = Step("hub.select_preset", EnrollmentStep, EnsureResult, summary="select the preset")
HUB_CANARY = Step("hub.canary", EnrollmentStep, Finding, heartbeat=WAIT_HEARTBEAT, summary="canary")
HUB_REMOVE_ENROLLMENT = Step(
    "hub.remove_enrollment", EnrollmentStep, list[EnsureResult], summary="remove the enrollment record"
)

WORKER_PLAN = Step("worker.plan", EnrollmentStep, list[PlanStep], summary="bootstrap plan")
WORKER_INSTALL = Step(
    "worker.install", EnrollmentStep, list[EnsureResult], summary="retired: bootstrap (now konduktor.bootstrap)"
)
WORKER_UNINSTALL = Step("worker.uninstall", EnrollmentStep, list[EnsureResult], summary="remove installed objects")
WORKER_RECORD_INVARIANTS = Step(
    "worker.record_invariants", EnrollmentStep, Invariants, summary="record running workload invariants"
)
WORKER_CHECK_INVARIANTS = Step("worker.check_invariants", EnrollmentStep, list[Finding], summary="verify invariants")
WORKER_WAIT_CONVERGENCE = Step(
    "worker.wait_convergence",
    ConditionWait,
    list[ObjectRef],
    timeout=WAIT_TIMEOUT,
    heartbeat=WAIT_HEARTBEAT,
    summary="Kueue/JobSet convergence",
)
WORKER_ADOPTION_DIFF = Step("worker.adoption_diff", EnrollmentStep, AdoptionDiff, summary="diff the preset objects")
WORKER_ADOPT = Step("worker.adopt", EnrollmentStep, list[ObjectRef], summary="label the preset objects")
WORKER_VERIFY_UIDS = Step("worker.verify_uids", EnrollmentStep, list[Finding], summary="verify adopted UIDs")
WORKER_WAIT_NO_REMOTE_WORK = Step(
    "worker.wait_no_remote_work", ConditionWait, bool, timeout=WAIT_TIMEOUT, heartbeat=WAIT_HEARTBEAT, summary="drain"
)
WORKER_RESET_PLAN = Step("worker.reset_plan", EnrollmentStep, list[PlanStep], summary="worker reset --dry-run")
WORKER_RESET = Step("worker.reset", EnrollmentStep, list[EnsureResult], summary="worker reset")
WORKER_RESET_APPROVED = Step(
    "worker.reset_approved", ApprovedReset, list[EnsureResult], summary="worker reset of exactly the approved dry run"
)

RECORD_WORKERCLUSTER: Step[WorkerClusterRecord, StoredRecord] = Step(
    "records.worker", WorkerClusterRecord, StoredRecord, summary="store the worker record in the worker cluster"
)

ENROLLMENT: tuple[Step[Any, Any], ...] = (
    HUB_PREFLIGHT,
    HUB_DESTROY_KEY,
    KONDUKTOR_BOOTSTRAP,
    HUB_WAIT_CONDITIONS,
    HUB_WAIT_WORKERCLUSTER,
    HUB_CORDON,
    HUB_CORDON_ON_APPEARANCE,
    HUB_CORDON_POOL,
    HUB_SELECT_PRESET,
    HUB_CANARY,
    HUB_REMOVE_ENROLLMENT,
    WORKER_PLAN,
    WORKER_UNINSTALL,
    WORKER_RECORD_INVARIANTS,
    WORKER_CHECK_INVARIANTS,
    WORKER_WAIT_CONVERGENCE,
    WORKER_ADOPTION_DIFF,
    WORKER_ADOPT,
    WORKER_VERIFY_UIDS,
    WORKER_WAIT_NO_REMOTE_WORK,
    WORKER_RESET_PLAN,
    WORKER_RESET,
    WORKER_RESET_APPROVED,
    RECORD_WORKERCLUSTER,
)
"""Every activity of WorkerEnrollment and WorkerDecommission."""

RETIRED: tuple[Step[Any, Any], ...] = (HUB_CREATE_ENROLLMENT, WORKER_INSTALL)
"""Steps of runs recorded before ``konduktor.bootstrap`` (patch ``konduktor-cli-bootstrap``): the workflow still
schedules them when it replays such a run, so their names stay; no worker registers them (a run started before
that change and resumed now fails at the first of them with Temporal's "not registered" error)."""
