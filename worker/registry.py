"""Every workflow and activity the worker registers, and the activity function behind each catalogue step."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

from tenantflow.activities.capacity import steps as capacity
from tenantflow.activities.change import steps as change
from tenantflow.activities.common.registered import registered_name
from tenantflow.activities.drift import steps as drift
from tenantflow.activities.hub import konduktor
from tenantflow.activities.hub import steps as hub
from tenantflow.activities.identity import steps as identity
from tenantflow.activities.kube import steps as kube
from tenantflow.activities.login import steps as login
from tenantflow.activities.records import gate_notify, handover, hold, lifecycle
from tenantflow.activities.records import steps as records
from tenantflow.activities.slurm import jobs as slurm_jobs
from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.smoke import steps as smoke
from tenantflow.activities.storage import steps as storage
from tenantflow.activities.validate import steps as validate
from tenantflow.activities.workercluster import reset as worker_reset
from tenantflow.activities.workercluster import steps as workercluster
from tenantflow.models.step import Step
from tenantflow.workflows import decommission, enrollment
from tenantflow.workflows.change import TenantChange
from tenantflow.workflows.drift import TenantDrift
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.plan import TenantPlan
from tenantflow.workflows.record_reads import TenantRecords, WorkerClusterRecords
from tenantflow.workflows.tenant_hold import TenantHold

I = TypeVar("I")  # noqa: E741 - the step's input type
R = TypeVar("R")

WORKFLOWS: list[type] = [
    TenantOnboarding,
    TenantChange,
    TenantOffboarding,
    TenantHold,
    TenantLifecycle,
    *enrollment.WORKFLOWS,
    *decommission.WORKFLOWS,
    TenantDrift,
    TenantPlan,
    TenantRecords,
    WorkerClusterRecords,
]

ACTIVITY_MODULES: tuple[ModuleType, ...] = (
    capacity,
    identity,
    kube,
    slurm,
    slurm_jobs,
    storage,
    login,
    smoke,
    validate,
    handover,
    hub,
    konduktor,
    workercluster,
    worker_reset,
    records,
    drift,
    lifecycle,
    hold,
    gate_notify,
    change,
)
ACTIVITIES: list[Callable[..., Any]] = [fn for module in ACTIVITY_MODULES for fn in module.ACTIVITIES]


BY_NAME: dict[str, Callable[..., Any]] = {registered_name(fn): fn for fn in ACTIVITIES}


def implementation(step: Step[I, R]) -> Callable[[I], R]:
    """The registered function of ``step``, to call directly (``tests/unit/models/test_runbook.py`` checks that
    its parameter and return types are the step's)."""
    return cast(Callable[[I], R], BY_NAME[step.name])
