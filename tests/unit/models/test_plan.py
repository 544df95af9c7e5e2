"""models/plan.py: the plan hash an operator approves, and the views the plan printout is built from."""

from __future__ import annotations

from typing import Any

from tenantflow.models.plan import Action, Plan, PlanStep

PINNED_HASH = "cb1f87860fda9e4c"
"""The hash of :func:`steps` below. Approvals name a plan by its hash, and running workflows compare it, so
a change of the hashing (field names, serialisation) must be deliberate: it invalidates pending approvals."""


def step(layer: str, kind: str, name: str, action: Action, namespace: str | None = None, **detail: Any) -> PlanStep:
    return PlanStep(layer=layer, kind=kind, name=name, namespace=namespace, action=action, detail=detail)


def steps() -> list[PlanStep]:
    return [
        step("kube", "Namespace", "tenant-foo", Action.create, labels={"b": "2", "a": "1"}),
        step("slurm", "qos", "normal-foo", Action.unchanged),
    ]


def test_hash_is_pinned_sixteen_hex_digits() -> None:
    assert Plan(title="onboard tenant-foo", steps=steps()).plan_hash == PINNED_HASH


def test_hash_covers_the_steps_only() -> None:
    base = Plan(title="onboard tenant-foo", steps=steps())
    retitled = Plan(title="another title", steps=steps(), notes=["a note the approver reads"])
    assert retitled.plan_hash == base.plan_hash


def test_hash_ignores_the_order_of_detail_keys() -> None:
    reordered = [step("kube", "Namespace", "tenant-foo", Action.create, labels={"a": "1", "b": "2"}), steps()[1]]
    assert Plan(title="t", steps=reordered).plan_hash == PINNED_HASH


def test_hash_changes_with_any_step_field() -> None:
    variants = [
        [step("kube", "Namespace", "tenant-bar", Action.create, labels={"b": "2", "a": "1"}), steps()[1]],
        [step("kube", "Namespace", "tenant-foo", Action.adopt, labels={"b": "2", "a": "1"}), steps()[1]],
        [step("kube", "Namespace", "tenant-foo", Action.create, labels={"b": "2", "a": "9"}), steps()[1]],
        [step("kube", "Namespace", "tenant-foo", Action.create, "x", labels={"b": "2", "a": "1"}), steps()[1]],
        list(reversed(steps())),
        steps()[:1],
    ]
    hashes = {Plan(title="t", steps=v).plan_hash for v in variants}
    assert PINNED_HASH not in hashes
    assert len(hashes) == len(variants)


def test_writes_leave_out_unchanged_and_left_objects() -> None:
    plan = Plan(
        title="t",
        steps=[
            step("kube", kind, kind.lower(), action)
            for kind, action in (
                ("A", Action.create),
                ("B", Action.unchanged),
                ("C", Action.update),
                ("D", Action.leave),
                ("E", Action.delete),
                ("F", Action.adopt),
            )
        ],
    )
    assert [s.kind for s in plan.writes()] == ["A", "C", "E", "F"]


def test_by_layer_groups_in_plan_order() -> None:
    plan = Plan(
        title="t",
        steps=[
            step("slurm", "account", "a", Action.create),
            step("kube", "Namespace", "n", Action.create),
            step("slurm", "qos", "q", Action.update),
        ],
    )
    grouped = plan.by_layer()
    assert list(grouped) == ["slurm", "kube"]
    assert [s.name for s in grouped["slurm"]] == ["a", "q"]
    assert [s.name for s in grouped["kube"]] == ["n"]
