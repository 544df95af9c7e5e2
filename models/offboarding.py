"""The result of ``TenantOffboarding``: what was removed and what was kept."""

from __future__ import annotations

from pydantic import Field

from models.base import Strict
from models.plan import Plan, PlanStep
from models.results import EnsureResult


class OffboardingResult(Strict):
    slug: str
    status: str = Field(..., description="completed or rejected")
    plan: Plan | None = None
    removed: list[EnsureResult] = Field(default_factory=list)
    kept: list[PlanStep] = Field(default_factory=list, description="data kept because purge_data was not set")
    message: str = ""
