"""Drift: how an onboarded tenant's world differs from its recorded contract, per layer and object.

The onboarding plan of the recorded contract, computed read-only against the world, says what is
missing (the plan would create it) and what changed (it would update or adopt it); the drift check
adds what is there but not wanted (an Authentik group member, a Slurm association, a NetworkPolicy
the contract does not name). Repair goes through the usual plan and approve gate: ``tenantflow
onboard`` with the recorded contract.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.targets import KubeTarget

DRIFT_WORKFLOW = "TenantDrift"
"""The workflow type of the fleet drift check (read-only)."""
DRIFT_SCHEDULE_ID = "tenantflow-drift"
"""The Temporal Schedule ``tenantflow drift --schedule`` creates (or updates)."""
DEFAULT_CONCURRENCY = 8
NIGHTLY = "0 2 * * *"
"""When the schedule runs the check (cron, UTC) unless ``--cron`` says otherwise."""


class DriftKind(StrEnum):
    changed = "changed"
    missing = "missing"
    extra = "extra"


DRIFT_OF_ACTION: dict[Action, DriftKind] = {
    Action.create: DriftKind.missing,
    Action.update: DriftKind.changed,
    Action.adopt: DriftKind.changed,
}
"""What a planned action says about an onboarded tenant: the plan would create what is missing, update (or
adopt, when the object lost tenantflow's ownership labels) what changed; unchanged and left objects are clean."""


class DriftItem(Strict):
    """One object that differs from the recorded contract."""

    layer: str
    kind: str
    name: str
    namespace: str | None = None
    drift: DriftKind
    detail: str = ""

    @classmethod
    def of_step(cls, step: PlanStep) -> DriftItem | None:
        """The drift a plan step shows, or None when the step leaves the object as it is."""
        drift = DRIFT_OF_ACTION.get(step.action)
        if drift is None:
            return None
        detail = (
            "not there: the plan would create it"
            if drift is DriftKind.missing
            else f"the plan would {step.action.value} it"
        )
        return cls(
            layer=step.layer, kind=step.kind, name=step.name, namespace=step.namespace, drift=drift, detail=detail
        )

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


class DriftReport(Strict):
    """One tenant's drift check: what differs, or why it could not be checked."""

    slug: str
    items: list[DriftItem] = Field(default_factory=list)
    error: str = Field("", description="why the check could not finish (nothing is known about drift then)")

    @property
    def clean(self) -> bool:
        return not self.items and not self.error


class DriftTarget(Strict):
    """One tenant to check: its slug and the cluster holding its record."""

    records: KubeTarget
    slug: str


class FleetDriftInput(Strict):
    """Which tenants to check: every onboarded tenant recorded in ``records`` (or only ``slugs``)."""

    records: KubeTarget = Field(..., description="the cluster holding the tenant records")
    slugs: list[str] = Field(default_factory=list, description="only these tenants (default: every onboarded one)")
    concurrency: int = Field(DEFAULT_CONCURRENCY, ge=1, le=64, description="tenants checked at the same time")


class FleetDriftReport(Strict):
    """The fleet's drift: one entry per tenant checked."""

    checked_at: datetime
    tenants: list[DriftReport] = Field(default_factory=list)

    @property
    def drifted(self) -> list[DriftReport]:
        return [t for t in self.tenants if t.items]

    @property
    def failed(self) -> list[DriftReport]:
        return [t for t in self.tenants if t.error]
