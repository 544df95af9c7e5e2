"""Every workflow and activity the worker registers, and the activity function behind each catalogue step."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

from temporalio import activity

from tenantflow.activities import (
    capacity,
    handover,
    hub,
    identity,
    kube,
    login,
    records,
    slurm,
    smoke,
    storage,
    validate,
    worker_reset,
    workercluster,
)
from tenantflow.models.runbook import Step
from tenantflow.workflows import decommission, enrollment
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding

I = TypeVar("I")  # noqa: E741 - the step's input type
R = TypeVar("R")

WORKFLOWS: list[type] = [TenantOnboarding, TenantOffboarding, *enrollment.WORKFLOWS, *decommission.WORKFLOWS]

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
    workercluster,
    worker_reset,
    records,
)
ACTIVITIES: list[Callable[..., Any]] = [fn for module in ACTIVITY_MODULES for fn in module.ACTIVITIES]


def activity_name(fn: Callable[..., Any]) -> str:
    """The name ``fn`` is registered under (its ``@activity.defn(name=...)``).

    temporalio has no public accessor for an activity's definition; this is the one place that reads it.
    """
    return str(activity._Definition.must_from_callable(fn).name)


BY_NAME: dict[str, Callable[..., Any]] = {activity_name(fn): fn for fn in ACTIVITIES}


def implementation(step: Step[I, R]) -> Callable[[I], R]:
    """The registered function of ``step``, to call directly (``tests/unit/test_runbook_catalogue.py`` checks that
    its parameter and return types are the step's)."""
    return cast(Callable[[I], R], BY_NAME[step.name])
