"""A node an administrator drained (an RMA) is held: a shrink never chooses it, and neither the drain nor the resume
of a release touches its state or reason. Against the real slurmctld behind the kube emulator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.change import capacity as change_capacity
from tenantflow.activities.slurm.cli import SlurmCtl
from tenantflow.models.onboarding import Facts, StepInput
from tenantflow.models.results import Outcome
from tests.activities.slurm.conftest import SlurmLab, make_contract

RMA = "RMA: GPU3 fails ECC"


@pytest.fixture
def rma_node(lab: SlurmLab) -> Iterator[str]:
    lab.sh("scontrol", "update", "NodeName=gpu-02", "State=DRAIN", f"Reason={RMA}")
    try:
        yield "gpu-02"
    finally:
        lab.sh("scontrol", "update", "NodeName=gpu-02", "State=RESUME")


def test_an_admins_drain_is_held_and_survives_a_release(lab: SlurmLab, rma_node: str) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    held = change_capacity.held_nodes(ctl, ["gpu-01", rma_node])
    assert list(held) == [rma_node] and "DRAIN" in held[rma_node] and RMA in held[rma_node], held
    contract = make_contract(lab.target)
    inp = StepInput(contract=contract, run_id=f"tenant/{contract.slug}", facts=Facts(release_nodes=[rma_node]))
    drained = ActivityEnvironment().run(change_capacity.drain, inp)
    assert [(r.name, r.outcome) for r in drained.results] == [(rma_node, Outcome.unchanged)]
    assert [r.outcome for r in change_capacity.resume(ctl, [rma_node])] == [Outcome.unchanged]
    shown = lab.sh("scontrol", "show", "node", rma_node, "-o")
    assert f"Reason={RMA}" in shown and "DRAIN" in shown.partition(" State=")[2].split(" ", 1)[0], shown


def test_our_own_drain_is_not_held(lab: SlurmLab) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    contract = make_contract(lab.target)
    inp = StepInput(contract=contract, run_id=f"tenant/{contract.slug}", facts=Facts(release_nodes=["gpu-01"]))
    try:
        drained = ActivityEnvironment().run(change_capacity.drain, inp)
        assert [r.outcome for r in drained.results] == [Outcome.updated]
        assert change_capacity.held_nodes(ctl, ["gpu-01"]) == {}
    finally:
        assert [r.outcome for r in change_capacity.resume(ctl, ["gpu-01"])] == [Outcome.updated]
