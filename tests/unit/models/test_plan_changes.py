"""models/plan.py ``plan_changes``: what a reopened approval shows, one line per object that differs."""

from __future__ import annotations

from tenantflow.models.plan import Action, Plan, PlanStep, plan_changes


def step(name: str, action: Action = Action.create, **detail: object) -> PlanStep:
    return PlanStep(layer="kube", kind="Namespace", name=name, action=action, detail=detail)


def test_added_gone_and_changed_objects_each_get_a_line() -> None:
    before = Plan(title="t", steps=[step("a"), step("b"), step("c", mode="x")])
    after = Plan(title="t", steps=[step("a"), step("c", Action.adopt, mode="y"), step("d", Action.adopt)])
    assert plan_changes(before, after) == [
        "- create kube Namespace b",
        "~ kube Namespace c: create -> adopt (details changed)",
        "+ adopt kube Namespace d",
    ]


def test_equal_plans_have_no_changes_and_namespaces_are_named() -> None:
    plan = Plan(title="t", steps=[PlanStep(layer="kube", kind="Role", name="r", namespace="ns", action=Action.create)])
    assert plan_changes(plan, plan) == []
    moved = Plan(title="t", steps=[plan.steps[0].model_copy(update={"action": Action.unchanged})])
    assert plan_changes(plan, moved) == ["~ kube Role ns/r: create -> unchanged"]
