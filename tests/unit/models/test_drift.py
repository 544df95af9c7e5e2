"""What a planned action says about an onboarded tenant, and how a fleet report sorts its tenants."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tenantflow.models.drift import DriftItem, DriftKind, DriftReport, FleetDriftReport
from tenantflow.models.plan import Action, PlanStep


@pytest.mark.parametrize(
    ("action", "drift"),
    [
        (Action.create, DriftKind.missing),
        (Action.update, DriftKind.changed),
        (Action.adopt, DriftKind.changed),
        (Action.unchanged, None),
        (Action.leave, None),
    ],
)
def test_a_plan_step_is_drift_when_the_plan_would_write(action: Action, drift: DriftKind | None) -> None:
    step = PlanStep(layer="kube", kind="NetworkPolicy", name="deny-all", namespace="tenant-a", action=action)
    item = DriftItem.of_step(step)
    assert (item.drift if item else None) == drift
    if item:
        assert item.label == "NetworkPolicy tenant-a/deny-all"


def test_a_fleet_report_tells_drifted_from_unchecked_tenants() -> None:
    extra = DriftItem(layer="identity", kind="GroupMember", name="mallory", drift=DriftKind.extra)
    report = FleetDriftReport(
        checked_at=datetime(2026, 12, 3, tzinfo=UTC),
        tenants=[
            DriftReport(slug="a"),
            DriftReport(slug="b", items=[extra]),
            DriftReport(slug="c", error="Authentik API is not usable"),
        ],
    )
    assert [t.slug for t in report.drifted] == ["b"]
    assert [t.slug for t in report.failed] == ["c"]
    assert [t.clean for t in report.tenants] == [True, False, False]
