"""``hub.cordon`` runs ``konduktor cluster cordon [--uncordon]`` every time (issue 24: ``spec.cordoned`` was a guessed
field): a WorkerCluster whose spec says nothing of a cordon, as one whose Hub keeps the cordon elsewhere would,
is still uncordoned through the CLI, never skipped as "unchanged"."""

from __future__ import annotations

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.hub.cordon import cordon
from tenantflow.models.enrollment_workflows import Cordon
from tenantflow.models.results import Outcome
from tests.enrollment.conftest import Lab

WORKERCLUSTER = "/apis/trainy.ai/v1alpha1/namespaces/forecasting/workerclusters/forecasting-us"


def test_an_uncordon_runs_the_documented_command_whatever_the_spec_says(no_agent: Lab) -> None:
    no_agent.hub.create(
        {
            "apiVersion": "trainy.ai/v1alpha1",
            "kind": "WorkerCluster",
            "metadata": {"name": "forecasting-us", "namespace": "forecasting"},
            "spec": {"enrollment": "forecasting-us"},
        }
    )
    no_agent.requests("hub", clear=True)
    result = ActivityEnvironment().run(cordon, Cordon(contract=no_agent.contract(), cordoned=False))
    assert result.outcome == Outcome.updated
    assert no_agent.konduktor_calls() == ["hub cluster cordon"]
    patches = [r for r in no_agent.requests("hub") if r["method"] == "PATCH" and r["path"] == WORKERCLUSTER]
    assert patches and all(r["status"] == 200 for r in patches)


def test_no_workercluster_is_absent_and_runs_nothing(no_agent: Lab) -> None:
    result = ActivityEnvironment().run(cordon, Cordon(contract=no_agent.contract(), cordoned=True))
    assert result.outcome == Outcome.absent
    assert no_agent.konduktor_calls() == []
