"""The input and result of ``TenantOffboarding``: what to tear down, what was removed and what was kept."""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.gates import Approval
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import EnsureResult
from tenantflow.models.status import RunOutcome
from tenantflow.models.tenant import TenantContract


class OffboardingInput(Strict):
    contract: TenantContract
    purge_data: bool = Field(False, description="also delete Weka filesystems; needs the confirm_purge gate")
    approval_escalate_after_s: int = Field(3600, ge=1)
    notes: list[str] = Field(
        default_factory=list,
        exclude_if=lambda notes: not notes,
        description="what the starter could not establish (the lifecycle at expiry): shown in the teardown plan",
    )


class OffboardingResult(Strict):
    slug: str
    status: RunOutcome = Field(..., description="completed, or rejected at the plan gate")
    plan: Plan | None = None
    removed: list[EnsureResult] = Field(default_factory=list)
    kept: list[PlanStep] = Field(default_factory=list, description="data kept because purge_data was not set")
    approvals: list[Approval] = Field(default_factory=list, description="who answered which gate, when")
    message: str = ""


JOB_KIND = "job"
"""The plan kind of a tenant's Slurm job in a teardown plan (a ``delete`` line: the job is cancelled)."""


class JobsToCancel(Strict):
    """What ``slurm.cancel_jobs`` gets: the tenant and the jobs its approved teardown plan lists (a job of the
    tenant's accounts that is not among them appeared after the plan; it is cancelled too, and named)."""

    contract: TenantContract
    planned: list[str] = Field(default_factory=list, description="the ids of the jobs the approved plan lists")
