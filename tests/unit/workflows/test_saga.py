"""workflows/saga.py: which steps a rollback undoes, in the runbook's order, and what counts as created."""

from __future__ import annotations

from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.models.runbook import APPLY, ROLLBACK
from tenantflow.models.step import Step
from tenantflow.workflows.saga import Saga, as_planned, with_planned

STEP = {step.name: step for step in APPLY}


def result(
    layer: str, name: str, outcome: Outcome = Outcome.created, kind: str = "obj", namespace: str | None = None
) -> EnsureResult:
    return EnsureResult(layer=layer, kind=kind, name=name, namespace=namespace, outcome=outcome)


def planned(layer: str, name: str, kind: str = "obj", namespace: str | None = None) -> PlanStep:
    return PlanStep(layer=layer, kind=kind, name=name, namespace=namespace, action=Action.create)


def push(saga: Saga, name: str, results: list[EnsureResult] | None = None) -> None:
    step = STEP[name]
    saga.push(step, [result(step.layer, step.short)] if results is None else results)


def steps(saga: Saga) -> list[str]:
    return [step.name for step, _ in saga.ordered()]


def test_rollback_runs_slurm_first_and_identity_last() -> None:
    saga = Saga()
    for name in (
        "identity.group",
        "storage.filesystems",
        "capacity.reservation",
        "kube.namespace",
        "slurm.accounts",
        "login.release",
    ):
        push(saga, name)
    assert steps(saga) == [
        "login.release",
        "slurm.accounts",
        "kube.namespace",
        "capacity.reservation",
        "storage.filesystems",
        "identity.group",
    ]
    assert [step.undo for step, _ in saga.ordered()] == list(ROLLBACK)


def test_a_step_without_an_undo_cannot_go_on_the_saga() -> None:
    saga = Saga()
    saga.push(Step("smoke.single_node", StepInput, StepResult), [result("smoke", "job")])
    try:
        saga.ordered()
    except ValueError as exc:
        assert "smoke.single_node has no undo" in str(exc)
    else:
        raise AssertionError("a step without an undo was ordered")


def test_within_a_layer_later_steps_are_undone_first() -> None:
    saga = Saga()
    for name in ("kube.namespace", "slurm.accounts", "kube.quota", "kube.network_policy", "slurm.qos"):
        push(saga, name)
    assert steps(saga) == ["slurm.qos", "slurm.accounts", "kube.network_policy", "kube.quota", "kube.namespace"]


def test_ordered_does_not_consume_the_stack() -> None:
    saga = Saga()
    push(saga, "kube.namespace")
    assert steps(saga) == steps(saga) == ["kube.namespace"]
    assert len(saga) == 1


def test_a_step_that_wrote_nothing_is_not_recorded() -> None:
    saga = Saga()
    push(saga, "kube.namespace", [result("kube", "ns", Outcome.unchanged), result("kube", "x", Outcome.absent)])
    push(saga, "kube.quota", [])
    assert len(saga) == 0
    push(saga, "kube.rbac", [result("kube", "p", Outcome.unchanged), result("kube", "q", Outcome.updated)])
    assert steps(saga) == ["kube.rbac"]


def test_a_planned_creation_is_recorded_even_when_the_step_reported_it_unchanged() -> None:
    saga = Saga()
    saga.push(
        STEP["kube.namespace"],
        [result("kube", "tenant-foo", Outcome.unchanged, kind="Namespace")],
        planned=[planned("kube", "tenant-foo", kind="Namespace")],
    )
    ((_, results),) = saga.ordered()
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
        ("limits", Outcome.created),
    ]


def test_a_planned_creation_finished_by_a_later_attempt_is_created_and_an_adopted_one_is_not() -> None:
    """Authentik's group whose create lost its answer: the next attempt finds it (ours) and sets its gid, reporting
    updated with the attributes it had as ``previous``; undoing that would restore them and leave the group. An
    object that is not ours (adopted) stays adopted."""
    results = [
        result("identity", "tenant-foo", Outcome.updated, kind="Group"),
        result("identity", "alice", Outcome.adopted, kind="User"),
    ]
    creates = [planned("identity", "tenant-foo", kind="Group"), planned("identity", "alice", kind="User")]
    assert [r.outcome for r in as_planned(results, creates)] == [Outcome.created, Outcome.adopted]
    assert [r.outcome for r in with_planned(results, creates)] == [Outcome.created, Outcome.adopted]


def test_with_planned_matches_kind_name_and_namespace() -> None:
    results = [result("kube", "x", Outcome.unchanged, kind="Secret", namespace="a")]
    merged = with_planned(results, [planned("kube", "x", kind="Secret", namespace="b")])
    assert [(r.namespace, r.outcome) for r in merged] == [("a", Outcome.unchanged), ("b", Outcome.created)]


def test_with_planned_adds_planned_creations_the_step_never_reported() -> None:
    merged = with_planned([], [planned("slurm", "normal-foo", kind="qos")])
    assert merged == [EnsureResult(layer="slurm", kind="qos", name="normal-foo", outcome=Outcome.created)]
    assert with_planned([], []) == []
