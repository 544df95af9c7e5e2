"""The read-only plan of a tenant contract (``tenantflow plan``): the ``TenantPlan`` workflow's input and report.

The workflow runs on the worker, where the services' credentials are, the catalogue's preflight and plan steps
of the contract as its onboarding would, and writes nothing; the operator's machine needs only Temporal access.
"""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.plan import Plan
from tenantflow.models.results import Finding
from tenantflow.models.tenant import TenantContract

PLAN_WORKFLOW = "TenantPlan"
"""The workflow type of the read-only plan of a contract."""


class PlanInput(Strict):
    """What ``TenantPlan`` plans: the contract, as ``tenantflow onboard`` would start it."""

    contract: TenantContract


class PlanReport(Strict):
    """What ``tenantflow plan`` found: every finding and, when preflight passed, the plan."""

    slug: str
    findings: list[Finding] = Field(default_factory=list)
    plan: Plan | None = None
    nodes: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.blocks]
