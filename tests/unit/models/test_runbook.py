"""The step catalogue agrees with the activities the worker registers (names, input and result types) and orders
the saga's undo."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest

from tenantflow.models import runbook
from tenantflow.models.enrollment_steps import ENROLLMENT
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.models.runbook import (
    APPLY,
    CATALOGUE,
    CHANGE,
    DRIFT,
    GATES,
    HOLD,
    LIFECYCLE,
    ONBOARDING,
    RECORD_READS,
    ROLLBACK,
    SMOKE,
    UNDO_ORDER,
)
from tenantflow.models.step import Step
from tenantflow.worker.registry import ACTIVITIES, BY_NAME
from tenantflow.workflows.saga import Saga

STEPS = list(CATALOGUE.values())


def signature_types(step: Step[Any, Any]) -> tuple[object, object]:
    """The first parameter's and the return annotation of the function registered as ``step.name``."""
    fn = BY_NAME[step.name]
    hints = get_type_hints(fn)
    first = next(iter(inspect.signature(fn).parameters))
    return hints[first], hints["return"]


def test_every_registered_activity_is_in_the_catalogue_once() -> None:
    assert len(BY_NAME) == len(ACTIVITIES), "two activity functions share a name"
    assert set(BY_NAME) == set(CATALOGUE)
    parts = (ONBOARDING, CHANGE, ENROLLMENT, DRIFT, RECORD_READS, LIFECYCLE, HOLD, GATES)
    assert len(CATALOGUE) == sum(map(len, parts)), "a step name appears twice in the catalogue"


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_step_types_match_the_activity_signature(step: Step[Any, Any]) -> None:
    assert step.name in BY_NAME, f"no activity registered as {step.name}"
    takes, returns = signature_types(step)
    assert takes == step.input, f"{step.name} takes {takes}, the catalogue says {step.input}"
    assert returns == step.result, f"{step.name} returns {returns}, the catalogue says {step.result}"


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_each_step_takes_exactly_one_argument(step: Step[Any, Any]) -> None:
    assert len(inspect.signature(BY_NAME[step.name]).parameters) == 1


def test_every_apply_step_is_undone_by_its_own_layer_in_rollback_order() -> None:
    for step in APPLY:
        assert step.undo is not None and step.undo in ROLLBACK, step.name
        assert step.undo.layer == step.layer, step.name
    assert [u.layer for u in ROLLBACK] == ["login", "slurm", "kube", "capacity", "storage", "identity"]
    assert all(step.undo is None for step in SMOKE), "smoke tests write nothing to undo"


def test_the_saga_unwinds_in_the_catalogues_rollback_order() -> None:
    saga = Saga()
    for step in APPLY:
        saga.push(step, [EnsureResult(layer=step.layer, kind="Thing", name=step.short, outcome=Outcome.created)])
    assert [step.name for step, _ in saga.ordered()] == [
        "login.verify",
        "login.release",
        "slurm.partition",
        "slurm.users",
        "slurm.qos",
        "slurm.accounts",
        "kube.rbac",
        "kube.network_policy",
        "kube.binding",
        "kube.quota",
        "kube.namespace",
        "capacity.wait_reservation",
        "capacity.reservation",
        "storage.csi",
        "storage.quotas",
        "storage.filesystems",
        "identity.verify_ldap",
        "identity.users",
        "identity.group",
    ]


def test_every_undo_has_a_heartbeat_timeout() -> None:
    """A worker that dies during a rollback costs the undo a minute, not its 5-minute start-to-close timeout."""
    assert all(step.heartbeat is not None and step.heartbeat < step.timeout for step in UNDO_ORDER)


def test_the_catalogue_builders_give_the_names_types_and_options_the_wire_knows() -> None:
    """The catalogue is built from these when its module loads; called here, a change to one shows as a test
    failure (bench/mutation.py measures them so: its workers import the catalogue before a mutant is on)."""
    preflight, plan, undo = runbook._preflight("kube"), runbook._plan("kube"), runbook._undo("kube")
    assert preflight == Step("kube.preflight", StepInput, StepResult, summary="kube: read-only preflight", local=True)
    assert plan == Step("kube.plan", StepInput, list[PlanStep], summary="kube: plan", local=True)
    assert undo == Step("kube.undo", UndoInput, list[EnsureResult], summary="kube: undo one applied step")
    assert runbook._layer_with_preflight("kube") == runbook.LayerWithPreflight(
        plan=plan, undo=undo, preflight=preflight
    )
    assert runbook._layer("login") == runbook.LayerSteps(plan=runbook._plan("login"), undo=runbook._undo("login"))
    applied = runbook._apply("kube.quota", "quota", kinds=("ResourceQuota",), timeout=runbook.LONG_TIMEOUT)
    assert applied == Step(
        "kube.quota",
        StepInput,
        StepResult,
        summary="quota",
        timeout=runbook.LONG_TIMEOUT,
        kinds=("ResourceQuota",),
        undo=runbook.KUBE.undo,
    )
    assert runbook._smoke("smoke.nccl", "all-reduce") == Step(
        "smoke.nccl", StepInput, StepResult, summary="all-reduce", timeout=runbook.SMOKE_TIMEOUT
    )
    assert runbook._change("drain", "drain", kinds=("Node",)) == Step(
        "change.drain", StepInput, StepResult, summary="drain", kinds=("Node",)
    )
