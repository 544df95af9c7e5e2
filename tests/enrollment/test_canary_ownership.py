"""``hub.canary`` uses and deletes only the JobSet its own run created: the canary's name is fixed per worker
(``canary-<worker>``), so a user's JobSet of that name, already completed, was taken for the canary (the enrollment
passed its canary without one running) and then deleted. Against the lab's Hub API server (the upstream JobSet CRD),
with no worker agent: nothing dispatches, the tests set the JobSets' status themselves."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.hub.canary import canary, canary_jobset
from tenantflow.models.enrollment_workflows import EnrollmentStep
from tests.enrollment.conftest import Lab

NAME, NS = "canary-forecasting-us", "forecasting"
COMPLETED = {
    "conditions": [
        {
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": "2026-12-07T06:00:00Z",
        }
    ]
}


def _completed_jobset(lab: Lab, annotations: dict[str, str]) -> dict[str, Any]:
    doc = canary_jobset(NAME, NS)
    del doc["metadata"]["labels"]  # not queued: the lab's Hub dispatches nothing of it
    doc["metadata"]["annotations"] = annotations
    made = lab.hub.create(doc)
    return lab.hub.update_status({**made, "status": COMPLETED})


def _jobset_uid(lab: Lab) -> str | None:
    found = [j for j in lab.hub.list("jobset.x-k8s.io", "jobsets", NS) if j["metadata"]["name"] == NAME]
    return found[0]["metadata"]["uid"] if found else None


def test_a_strangers_jobset_of_the_canarys_name_is_neither_used_nor_deleted(no_agent: Lab) -> None:
    theirs = _completed_jobset(no_agent, {"owner": "someone else"})
    env = ActivityEnvironment()
    with pytest.raises(ApplicationError) as refused:
        env.run(canary, EnrollmentStep(contract=no_agent.contract()))
    assert refused.value.type == "CanaryNameTaken"
    assert _jobset_uid(no_agent) == theirs["metadata"]["uid"]


def test_an_earlier_runs_canary_is_not_taken_for_this_runs(no_agent: Lab) -> None:
    env = ActivityEnvironment()
    earlier = {"tenantflow.io/created-by": env.info.workflow_id, "tenantflow.io/run": "an-earlier-run"}
    left = _completed_jobset(no_agent, earlier)
    with pytest.raises(ApplicationError) as refused:
        env.run(canary, EnrollmentStep(contract=no_agent.contract()))
    assert refused.value.type == "CanaryNameTaken"
    assert _jobset_uid(no_agent) == left["metadata"]["uid"]


def test_a_retried_attempt_waits_for_and_deletes_its_own_canary(no_agent: Lab) -> None:
    env = ActivityEnvironment()
    ours = {"tenantflow.io/created-by": env.info.workflow_id, "tenantflow.io/run": env.info.workflow_run_id}
    _completed_jobset(no_agent, ours)
    finding = env.run(canary, EnrollmentStep(contract=no_agent.contract()))
    assert finding.ok, finding
    assert _jobset_uid(no_agent) is None
