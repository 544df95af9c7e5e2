"""The chaos summary travels from each pytest-xdist worker to the controller through execnet."""

from __future__ import annotations

import execnet

from tenantflow.models.status import RunOutcome
from tests.chaos.kit import ChaosStats


def test_a_workers_figures_survive_execnet_and_add_up_on_the_controller() -> None:
    worker = ChaosStats()
    worker.scenario("worker crash").outcome = RunOutcome.completed
    worker.crashes += 2
    worker.notes.append("slurmctld restarted")

    sent = execnet.loads(execnet.dumps(worker.marshal()))

    controller = ChaosStats()
    controller.scenario("server restart").outcome = "rejected"
    controller.absorb(sent)
    assert controller.scenarios == 2
    assert controller.crashes == 2
    assert controller.notes == ["slurmctld restarted"]
    assert [(line.name, line.outcome) for line in controller.table] == [
        ("server restart", "rejected"),
        ("worker crash", "completed"),
    ]
