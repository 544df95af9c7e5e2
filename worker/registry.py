"""Every workflow and activity the worker registers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities import capacity, handover, identity, kube, login, slurm, smoke, storage, validate
from workflows.onboarding import TenantOnboarding

WORKFLOWS: list[type] = [TenantOnboarding]

ACTIVITIES: list[Callable[..., Any]] = [
    *capacity.ACTIVITIES,
    *identity.ACTIVITIES,
    *kube.ACTIVITIES,
    *slurm.ACTIVITIES,
    *storage.ACTIVITIES,
    *login.ACTIVITIES,
    *smoke.ACTIVITIES,
    *validate.ACTIVITIES,
    *handover.ACTIVITIES,
]
