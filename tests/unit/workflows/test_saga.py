"""workflows/saga.py: which steps a rollback undoes, in the runbook's order, and what counts as created."""

from __future__ import annotations

from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.workflows.saga import ROLLBACK_ORDER, Saga, with_planned


def result(
    layer: str, name: str, outcome: Outcome = Outcome.created, kind: str = "obj", namespace: str | None = None
) -> EnsureResult:
    return EnsureResult(layer=layer, kind=kind, name=name, namespace=namespace, outcome=outcome)


def planned(layer: str, name: str, kind: str = "obj", namespace: str | None = None) -> PlanStep:
    return PlanStep(layer=layer, kind=kind, name=name, namespace=namespace, action=Action.create)


def steps(saga: Saga) -> list[str]:
    return [f"{layer}.{step}" for layer, step, _ in saga.ordered()]


def test_rollback_runs_slurm_first_and_identity_last() -> None:
    saga = Saga()
    for layer, step in (
        ("identity", "groups"),
        ("storage", "filesystems"),
        ("capacity", "reservation"),
        ("kube", "namespace"),
        ("slurm", "accounts"),
        ("login", "release"),
        ("smoke", "job"),
    ):
        saga.push(layer, step, [result(layer, step)])
    assert steps(saga) == [
        "smoke.job",
        "login.release",
        "slurm.accounts",
        "kube.namespace",
        "capacity.reservation",
        "storage.filesystems",
        "identity.groups",
    ]
    assert [entry[0] for entry in saga.ordered()] == list(ROLLBACK_ORDER)


def test_within_a_layer_later_steps_are_undone_first() -> None:
    saga = Saga()
    saga.push("kube", "namespace", [result("kube", "ns")])
    saga.push("slurm", "accounts", [result("slurm", "a")])
    saga.push("kube", "quota", [result("kube", "q")])
    saga.push("kube", "policies", [result("kube", "p")])
    saga.push("slurm", "qos", [result("slurm", "q")])
    assert steps(saga) == ["slurm.qos", "slurm.accounts", "kube.policies", "kube.quota", "kube.namespace"]


def test_ordered_does_not_consume_the_stack() -> None:
    saga = Saga()
    saga.push("kube", "namespace", [result("kube", "ns")])
    assert steps(saga) == steps(saga) == ["kube.namespace"]
    assert len(saga) == 1


def test_a_step_that_wrote_nothing_is_not_recorded() -> None:
    saga = Saga()
    saga.push("kube", "namespace", [result("kube", "ns", Outcome.unchanged), result("kube", "x", Outcome.absent)])
    saga.push("kube", "quota", [])
    assert len(saga) == 0
    saga.push("kube", "policies", [result("kube", "p", Outcome.unchanged), result("kube", "q", Outcome.updated)])
    assert steps(saga) == ["kube.policies"]


def test_a_planned_creation_is_recorded_even_when_the_step_reported_it_unchanged() -> None:
    saga = Saga()
    saga.push(
        "kube",
        "namespace",
        [result("kube", "tenant-foo", Outcome.unchanged, kind="Namespace")],
        planned=[planned("kube", "tenant-foo", kind="Namespace")],
    )
    ((_, _, results),) = saga.ordered()
    assert [(r.name, r.outcome) for r in results] == [("tenant-foo", Outcome.created)]


def test_with_planned_marks_planned_creations_created_and_keeps_the_rest() -> None:
    results = [
        result("kube", "ns", Outcome.unchanged, kind="Namespace"),
        result("kube", "quota", Outcome.unchanged, kind="ResourceQuota", namespace="ns"),
        result("kube", "limits", Outcome.updated, kind="LimitRange", namespace="ns"),
    ]
    merged = with_planned(
        results, [planned("kube", "ns", kind="Namespace"), planned("kube", "limits", kind="LimitRange", namespace="ns")]
    )
    assert [(r.name, r.outcome) for r in merged] == [
        ("ns", Outcome.created),
        ("quota", Outcome.unchanged),
        ("limits", Outcome.updated),
    ]


def test_with_planned_matches_kind_name_and_namespace() -> None:
    results = [result("kube", "x", Outcome.unchanged, kind="Secret", namespace="a")]
    merged = with_planned(results, [planned("kube", "x", kind="Secret", namespace="b")])
    assert [(r.namespace, r.outcome) for r in merged] == [("a", Outcome.unchanged), ("b", Outcome.created)]


def test_with_planned_adds_planned_creations_the_step_never_reported() -> None:
    merged = with_planned([], [planned("slurm", "normal-foo", kind="qos")])
    assert merged == [EnsureResult(layer="slurm", kind="qos", name="normal-foo", outcome=Outcome.created)]
    assert with_planned([], []) == []
