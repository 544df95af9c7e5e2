"""The drift check computes the onboarding plan with the catalogue's plan activities, in the catalogue's order,
and says which owned fields of a changed object differ."""

from __future__ import annotations

from tenantflow.activities.common.registered import registered_name
from tenantflow.activities.drift.extras import leaf_differences
from tenantflow.activities.drift.steps import PLANS
from tenantflow.models.runbook import PLAN


def test_the_drift_check_runs_every_plan_activity_of_the_catalogue_in_order() -> None:
    assert [registered_name(fn) for fn in PLANS] == [step.name for step in PLAN]


def test_leaf_differences_name_each_field_that_differs_with_both_values() -> None:
    want = {"metadata": {"labels": {"a": "1"}}, "spec": {"hard": {"requests.nvidia.com/gpu": "16", "pods": "10"}}}
    have = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"hard": {"requests.nvidia.com/gpu": "8"}}}
    assert leaf_differences(want, have) == [
        "spec.hard.requests.nvidia.com/gpu: 8 (want 16)",
        "spec.hard.pods: None (want 10)",
    ]
    assert leaf_differences(want, {**have, "spec": want["spec"]}) == []
