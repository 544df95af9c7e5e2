"""Versions read, not guessed (issue 24 item 4): Kueue and JobSet converge to the versions the organization selected
on the Hub, and the ``trainy.ai`` kinds are addressed at the version the Hub's API discovery prefers."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.workercluster.steps import wait_convergence
from tenantflow.models.enrollment_workflows import ConditionWait
from tenantflow.models.targets import KubeTarget
from tests.enrollment.conftest import Lab

MERGE = "application/merge-patch+json"


def running(lab: Lab, namespace: str, name: str) -> str:
    deployment = lab.worker.get("apps", "deployments", name, namespace)
    image: str = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


def select(lab: Lab, **versions: str) -> None:
    """The organization selects other versions on the Hub (as Trainy would change its Organization)."""
    lab.hub.patch("trainy.ai", "organizations", "forecasting", {"spec": versions}, MERGE)


def test_convergence_compares_with_the_versions_the_organization_selected(brownfield: Lab) -> None:
    kueue = running(brownfield, "kueue-system", "kueue-controller-manager")
    jobset = running(brownfield, "jobset-system", "jobset-controller-manager")
    assert kueue.endswith(":v0.14.8") and jobset.endswith(":v0.7.2"), "the brownfield worker's own versions"
    select(brownfield, kueueVersion="v0.14.8", jobsetVersion="v0.7.2")
    wait = ConditionWait(contract=brownfield.contract(brownfield=True), conditions=[], budget_s=2)
    assert {d.image for d in wait_convergence(wait)} == {kueue, jobset}, "converged: nothing to upgrade"
    select(brownfield, kueueVersion="v0.15.3")
    with pytest.raises(ApplicationError) as timeout:
        wait_convergence(wait)
    assert timeout.value.type == "ConvergenceTimeout"
    assert "Deployment/kueue-system/kueue-controller-manager (to registry.k8s.io/kueue/kueue:v0.15.3)" in str(
        timeout.value
    )
    assert "jobset" not in str(timeout.value), "JobSet runs the selected v0.7.2"


def test_a_cluster_serving_no_trainy_api_is_named_not_read_as_empty(brownfield: Lab) -> None:
    """``GET /apis/trainy.ai`` answers 404 on the worker: a contract naming it as the Hub fails at once."""
    with pytest.raises(ApplicationError) as refused:
        KubeObjects(KubeTarget(context="worker")).get("WorkerCluster", "forecasting-us", "forecasting")
    assert refused.value.type == "ApiGroupNotServed" and refused.value.non_retryable
    assert "serves no trainy.ai API" in str(refused.value)
