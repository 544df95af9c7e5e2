"""An enrollment's compensation (``worker.uninstall``) resets only what its own plan created: nobody approves that
reset, and ``konduktor worker reset`` removes everything Konduktor installed on the worker. Enrolling a worker
that already carries Konduktor's agent (enrolled before) and then rejecting the bootstrap plan, or failing anywhere
before the uncordon, ran that reset and tore the other enrollment's agent down. Against the lab's worker API server
and the ``konduktor`` stand-in, with the step's facts as the compensation makes them (the plan's worker creates)."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.workercluster.reset import uninstall
from tenantflow.activities.workercluster.steps import plan
from tenantflow.models.enrollment_workflows import EnrollmentFacts, EnrollmentStep
from tenantflow.models.plan import Action
from tenantflow.models.results import EnsureResult, Outcome
from tests.enrollment.conftest import Lab

INSTALLED = {"trainy.ai/installed-by": "konduktor", "trainy.ai/component": "agent"}
"""What the stand-in's bootstrap labels its components with (``lab/konduktor/facts.py``: ``INSTALLED_BY``)."""


def _compensation_step(lab: Lab) -> EnrollmentStep:
    """The step ``worker.uninstall`` gets from a compensation: the planned worker creates as installed."""
    step = EnrollmentStep(contract=lab.contract())
    creates = [s for s in ActivityEnvironment().run(plan, step) if s.layer == "worker" and s.action == Action.create]
    installed = [
        EnsureResult(layer="worker", kind=s.kind, name=s.name, namespace=s.namespace, outcome=Outcome.created)
        for s in creates
    ]
    return step.model_copy(update={"facts": EnrollmentFacts(installed=installed)})


def test_a_worker_enrolled_before_keeps_its_agent(no_agent: Lab) -> None:
    no_agent.worker.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "trainy-system"}})
    agent = no_agent.worker.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "trainy-worker-agent", "namespace": "trainy-system", "labels": INSTALLED},
        }
    )
    step = _compensation_step(no_agent)
    with pytest.raises(ApplicationError) as refused:
        ActivityEnvironment().run(uninstall, step)
    assert refused.value.type == "ResetBeyondThisRun"
    assert "ServiceAccount trainy-system/trainy-worker-agent" in refused.value.message
    kept = no_agent.worker.get("", "serviceaccounts", "trainy-worker-agent", "trainy-system")
    assert kept["metadata"]["uid"] == agent["metadata"]["uid"]
    assert no_agent.konduktor_calls() == ["worker worker reset --dry-run"]


def test_nothing_installed_runs_no_reset(no_agent: Lab) -> None:
    assert ActivityEnvironment().run(uninstall, _compensation_step(no_agent)) == []
    assert no_agent.konduktor_calls() == ["worker worker reset --dry-run"]
