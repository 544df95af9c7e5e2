"""An enrollment touches only the Hub enrollment it made. Preflight finds the worker's name free, but someone may
enroll a worker of that name while the bootstrap plan's gate waits: ``konduktor.bootstrap`` then re-keyed their
unredeemed BootstrapEnrollment with ``cluster enroll``, and the compensation decommissioned their WorkerCluster and
BootstrapEnrollment. Against the lab's Hub API server and the ``konduktor`` stand-in (what it ran is its call log)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.hub.konduktor import bootstrap
from tenantflow.activities.hub.steps import remove_enrollment
from tenantflow.models.enrollment_workflows import EnrollmentStep
from tests.enrollment.conftest import Lab

TRAINY = "trainy.ai"


def _enrollment_env() -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_type="WorkerEnrollment", workflow_id="enroll/forecasting/x")
    return env


def _theirs(lab: Lab) -> dict[str, Any]:
    """Someone else's enrollment of ``forecasting/forecasting-us``, made after preflight: not yet redeemed."""
    meta = {"name": "forecasting-us", "namespace": "forecasting"}
    spec = {"workerName": "forecasting-us", "publicKey": "their-key", "enrollmentId": "theirs"}
    made: dict[str, Any] = lab.hub.create(
        {"apiVersion": f"{TRAINY}/v1alpha1", "kind": "BootstrapEnrollment", "metadata": meta, "spec": spec}
    )
    return made


def _their_spec(lab: Lab) -> dict[str, Any]:
    found: dict[str, Any] = lab.hub.get(TRAINY, "bootstrapenrollments", "forecasting-us", "forecasting")["spec"]
    return found


async def test_bootstrap_does_not_rekey_an_enrollment_it_did_not_make(no_agent: Lab) -> None:
    theirs = _theirs(no_agent)
    with pytest.raises(ApplicationError) as refused:
        await _enrollment_env().run(bootstrap, EnrollmentStep(contract=no_agent.contract()))
    assert refused.value.type == "WorkerNameTaken"
    assert _their_spec(no_agent) == theirs["spec"]
    assert not [call for call in no_agent.konduktor_calls() if call.startswith("hub cluster enroll")]


def test_compensation_does_not_decommission_an_enrollment_it_did_not_make(no_agent: Lab) -> None:
    theirs = _theirs(no_agent)
    with pytest.raises(ApplicationError) as refused:
        _enrollment_env().run(remove_enrollment, EnrollmentStep(contract=no_agent.contract()))
    assert refused.value.type == "NotThisRunsEnrollment"
    assert _their_spec(no_agent) == theirs["spec"]
    assert no_agent.konduktor_calls() == []


def test_compensation_does_not_decommission_a_workercluster_its_enrollment_did_not_register(no_agent: Lab) -> None:
    """This run's BootstrapEnrollment, never redeemed, and a WorkerCluster of its name made by hand meanwhile: the
    WorkerCluster is not this run's registration, and ``cluster decommission`` would delete it."""
    env = _enrollment_env()
    meta = {
        "name": "forecasting-us",
        "namespace": "forecasting",
        "annotations": {
            "tenantflow.io/created-by": env.info.workflow_id,
            "tenantflow.io/run": env.info.workflow_run_id,
        },
    }
    spec = {"workerName": "forecasting-us", "publicKey": "our-key", "enrollmentId": "ours"}
    no_agent.hub.create(
        {"apiVersion": f"{TRAINY}/v1alpha1", "kind": "BootstrapEnrollment", "metadata": meta, "spec": spec}
    )
    theirs = no_agent.hub.create(
        {
            "apiVersion": f"{TRAINY}/v1alpha1",
            "kind": "WorkerCluster",
            "metadata": {"name": "forecasting-us", "namespace": "forecasting"},
            "spec": {"enrollment": "forecasting-us"},
        }
    )
    with pytest.raises(ApplicationError) as refused:
        env.run(remove_enrollment, EnrollmentStep(contract=no_agent.contract()))
    assert refused.value.type == "NotThisRunsEnrollment"
    kept = no_agent.hub.get(TRAINY, "workerclusters", "forecasting-us", "forecasting")
    assert kept["metadata"]["uid"] == theirs["metadata"]["uid"]
    assert no_agent.konduktor_calls() == []
