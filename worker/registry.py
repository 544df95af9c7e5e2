"""Every workflow and activity the worker registers, and the activity function behind each catalogue step."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

from tenantflow.activities import (
    capacity,
    change,
    drift,
    handover,
    hub,
    identity,
    konduktor,
    kube,
    lifecycle,
    login,
    records,
    slurm,
    smoke,
    storage,
    validate,
    worker_reset,
    workercluster,
)
from tenantflow.activities.registered import registered_name
from tenantflow.models.runbook import Step
from tenantflow.workflows import decommission, enrollment
from tenantflow.workflows.change import TenantChange
from tenantflow.workflows.drift import TenantDrift
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding

I = TypeVar("I")  # noqa: E741 - the step's input type
R = TypeVar("R")

WORKFLOWS: list[type] = [
    TenantOnboarding,
    TenantChange,
    TenantOffboarding,
    TenantLifecycle,
    *enrollment.WORKFLOWS,
    *decommission.WORKFLOWS,
    TenantDrift,
]

ACTIVITY_MODULES: tuple[ModuleType, ...] = (
    capacity,
    identity,
    kube,
    slurm,
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
    change,
)
ACTIVITIES: list[Callable[..., Any]] = [fn for module in ACTIVITY_MODULES for fn in module.ACTIVITIES]


BY_NAME: dict[str, Callable[..., Any]] = {registered_name(fn): fn for fn in ACTIVITIES}


def implementation(step: Step[I, R]) -> Callable[[I], R]:
    """The registered function of ``step``, to call directly (``tests/unit/test_runbook_catalogue.py`` checks that
    its parameter and return types are the step's)."""
    return cast(Callable[[I], R], BY_NAME[step.name])
