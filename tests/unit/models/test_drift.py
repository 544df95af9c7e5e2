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


def test_a_drift_item_keeps_the_step_and_says_what_the_plan_would_do() -> None:
    missing = DriftItem.of_step(PlanStep(layer="kube", kind="Namespace", name="tenant-a", action=Action.create))
    assert missing is not None
    assert (missing.layer, missing.kind, missing.name, missing.namespace) == ("kube", "Namespace", "tenant-a", None)
    assert missing.detail == "not there: the plan would create it"
    changed = DriftItem.of_step(PlanStep(layer="slurm", kind="qos", name="normal-a", action=Action.adopt))
    assert changed is not None and changed.detail == "the plan would adopt it"
