"""The canary JobSet against the upstream JobSet CRD (kubernetes-sigs/jobset v0.8.1, vendored in
``lab/crds_enrollment/``): the old ``template: {spec: {}}`` is refused by the Hub's API server with
kube-apiserver's 422 ``Invalid`` Status, and the canary the enrollment submits is admitted under strict field
validation. The expectations are the upstream schema and the apiserver's error shape, never the product's
document: the unit tests check that document against the vendored schema itself."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tenantflow.activities.hub.canary import canary_jobset
from tenantflow.lab.kubeapi import validation
from tenantflow.lab.kubeapi.registry import ResourceType, resource_type_from_crd
from tests.enrollment.conftest import Lab

CRD = Path(__file__).parents[2] / "lab" / "crds_enrollment" / "jobsets.jobset.x-k8s.io.yaml"
NAME, NS = "canary-forecasting-us", "forecasting"
OLD_TEMPLATE = {"spec": {}}
"""What the canary's ``replicatedJobs[].template`` was: a Job template without the pod template JobSpec
requires."""


def _with_old_template(doc: dict[str, Any]) -> dict[str, Any]:
    old = copy.deepcopy(doc)
    old["spec"]["replicatedJobs"][0]["template"] = OLD_TEMPLATE
    return old


@lru_cache(maxsize=1)
def _upstream() -> ResourceType:
    return resource_type_from_crd(yaml.safe_load(CRD.read_text()))


def test_the_vendored_crd_is_the_upstream_structural_schema() -> None:
    """Not the lab's former stand-in: no ``x-kubernetes-preserve-unknown-fields`` on the spec, and JobSpec
    requires its pod template."""
    schema = _upstream().schemas["v1alpha2"]
    spec = schema["properties"]["spec"]
    job_spec = spec["properties"]["replicatedJobs"]["items"]["properties"]["template"]["properties"]["spec"]
    assert "x-kubernetes-preserve-unknown-fields" not in spec
    assert job_spec["required"] == ["template"]


def test_the_canary_validates_against_the_upstream_schema() -> None:
    doc = canary_jobset(NAME, NS)
    findings = validation.check(_upstream(), doc, "v1alpha2")
    assert findings.errors == [] and findings.unknown == []
    [job] = doc["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    assert len(pod["containers"]) == 1 and pod["restartPolicy"] == "Never"
    assert doc["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "user-queue"}
    assert "ttlSecondsAfterFinished" not in json.dumps(doc), "kueue PR #14952: a worker-side TTL re-dispatches"


def test_the_old_template_fails_the_upstream_schema() -> None:
    findings = validation.check(_upstream(), _with_old_template(canary_jobset(NAME, NS)), "v1alpha2")
    assert findings.errors == [("spec.replicatedJobs[0].template.spec.template", "Required value")]


def _jobsets(lab: Lab) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=str(lab.kubeconfig), context="hub"))


def _create(lab: Lab, doc: dict[str, Any]) -> dict[str, Any]:
    return dict(
        _jobsets(lab).create_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", doc, field_validation="Strict"
        )
    )


def test_the_hub_refuses_the_old_template_with_the_apiservers_invalid_status(greenfield: Lab) -> None:
    with pytest.raises(ApiException) as refused:
        _create(greenfield, _with_old_template(canary_jobset(NAME, NS)))
    assert refused.value.status == 422
    assert json.loads(refused.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'JobSet.jobset.x-k8s.io "{NAME}" is invalid: '
        "spec.replicatedJobs[0].template.spec.template: Required value",
        "reason": "Invalid",
        "details": {
            "name": NAME,
            "group": "jobset.x-k8s.io",
            "kind": "JobSet",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.replicatedJobs[0].template.spec.template",
                }
            ],
        },
        "code": 422,
    }
    assert greenfield.hub.list("jobset.x-k8s.io", "jobsets", NS) == []


def test_the_hub_admits_the_canary_under_strict_field_validation(greenfield: Lab) -> None:
    doc = canary_jobset(NAME, NS)
    created = _create(greenfield, doc)
    assert created["metadata"]["uid"]
    stored = greenfield.hub.get("jobset.x-k8s.io", "jobsets", NAME, NS)
    sent_pod = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    stored_pod = stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert stored_pod["containers"] == sent_pod["containers"], "strict validation dropped or refused nothing"
