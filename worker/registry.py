"""Every workflow and activity the worker registers."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from activities import capacity, handover, identity, kube, login, slurm, smoke, storage, validate
from workflows.onboarding import TenantOnboarding

WORKFLOWS: list[type] = [TenantOnboarding]

ACTIVITY_MODULES: tuple[ModuleType, ...] = (capacity, identity, kube, slurm, storage, login, smoke, validate,
                                            handover)
ACTIVITIES: list[Callable[..., Any]] = [fn for module in ACTIVITY_MODULES for fn in module.ACTIVITIES]
