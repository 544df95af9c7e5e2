"""Every workflow and activity the worker registers."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from tenantflow.activities import (
    capacity,
    handover,
    hub,
    identity,
    kube,
    login,
    slurm,
    smoke,
    storage,
    validate,
    workercluster,
)
from tenantflow.workflows import decommission, enrollment
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding

WORKFLOWS: list[type] = [TenantOnboarding, TenantOffboarding, *enrollment.WORKFLOWS, *decommission.WORKFLOWS]

ACTIVITY_MODULES: tuple[ModuleType, ...] = (capacity, identity, kube, slurm, storage, login, smoke, validate,
                                            handover, hub, workercluster)
ACTIVITIES: list[Callable[..., Any]] = [fn for module in ACTIVITY_MODULES for fn in module.ACTIVITIES]
