"""The result of ``TenantOffboarding``: what was removed and what was kept."""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import EnsureResult


class OffboardingResult(Strict):
    slug: str
    status: str = Field(..., description="completed or rejected")
    plan: Plan | None = None
    removed: list[EnsureResult] = Field(default_factory=list)
    kept: list[PlanStep] = Field(default_factory=list, description="data kept because purge_data was not set")
    message: str = ""
