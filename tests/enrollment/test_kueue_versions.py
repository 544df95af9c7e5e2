"""Brownfield against Kueue as customers run it: plain manifests (defaulted and normalized by the API server),
an older Kueue serving only ``v1beta1``, and a ClusterQueue whose quota really differs from the preset."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.workercluster.invariants import invariants
from tenantflow.activities.workercluster.steps import adoption_diff
from tenantflow.models.enrollment_workflows import WORKER_LABEL, EnrollmentStep
from tenantflow.models.gates import GateAnswer
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, start_approved, wait_stage
from tests.enrollment.test_brownfield import uids

MERGE = "application/merge-patch+json"


def test_customer_objects_are_stored_with_defaults_and_canonical_quantities(brownfield: Lab) -> None:
    cq = brownfield.worker.get("kueue.x-k8s.io", "clusterqueues", "cluster-queue")
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO" and cq["spec"]["stopPolicy"] == "None"
    assert cq["spec"]["preemption"]["borrowWithinCohort"] == {"policy": "Never"}
    quotas = [r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]]
    assert quotas == ["10k", "10000Gi", "64"], 'the customer wrote 10000, 10000Gi and "64"'
    config = brownfield.worker.get("kueue.x-k8s.io", "provisioningrequestconfigs", "dws-config")
    assert config["spec"]["retryStrategy"] == {
        "backoffBaseSeconds": 60,
        "backoffLimitCount": 3,
        "backoffMaxSeconds": 1800,
    }


def test_adoption_diff_is_empty_for_plain_manifests_and_names_a_real_difference(brownfield: Lab) -> None:
    step = EnrollmentStep(contract=brownfield.contract(brownfield=True))
    clean = adoption_diff(step)
    assert len(clean.objects) == 5 and not clean.differences and not clean.findings
    brownfield.worker.patch(
        "kueue.x-k8s.io",
        "clusterqueues",
        "cluster-queue",
        {
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "10000"},
                                    {"name": "memory", "nominalQuota": "10000Gi"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": 32},
                                ],
                            }
                        ],
                    }
                ]
            }
        },
        MERGE,
    )
    differs = adoption_diff(step)
    assert differs.differences == {
        "ClusterQueue/cluster-queue": [
            "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota: preset '64', found '32'"
        ]
    }
    assert "Trainy" in differs.findings[0].fix


def test_invariants_read_workloads_on_a_v1beta1_only_worker(brownfield_v1beta1: Lab) -> None:
    assert brownfield_v1beta1.worker.registry.get("kueue.x-k8s.io", "workloads").versions == ("v1beta1",)
    recorded = invariants(KubeObjects(brownfield_v1beta1.contract().worker), ["forecasting"])
    assert sorted(r.key() for r in recorded.workloads if r.kind == "Workload") == [
        "Workload/forecasting/jobset-eval-sweep",
        "Workload/forecasting/jobset-train-llm",
    ]


async def test_brownfield_enrolls_a_v1beta1_only_worker(dev_env: WorkflowEnvironment, brownfield_v1beta1: Lab) -> None:
    lab = brownfield_v1beta1
    before = uids(lab)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, lab.contract(brownfield=True), condition_budget_s=20)
        for gate in ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions"):
            await wait_stage(handle, f"gate:{gate}")
            await handle.execute_update("answer_gate", args=[gate, GateAnswer()])
        result = await handle.result()
    assert result.status == "completed" and len(result.adopted) == 5
    assert {k: uids(lab)[k] for k in before} == before
    queue_labels = lab.worker.get("kueue.x-k8s.io", "localqueues", "user-queue", "forecasting")["metadata"]["labels"]
    assert queue_labels[WORKER_LABEL] == "11-forecasting-forecasting-us"


async def test_a_real_difference_is_refused_naming_the_field(dev_env: WorkflowEnvironment, brownfield: Lab) -> None:
    brownfield.worker.patch(
        "kueue.x-k8s.io",
        "clusterqueues",
        "cluster-queue",
        {"spec": {"preemption": {"withinClusterQueue": "Never"}}},
        MERGE,
    )
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, brownfield.contract(brownfield=True), condition_budget_s=20)
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await handle.query("status", result_type=RunStatus)
    [differs] = [f for f in status.findings if f.check == "adoption.spec-differs"]
    assert differs.message == (
        "ClusterQueue/cluster-queue: spec.preemption.withinClusterQueue: preset 'LowerPriority', found 'Never'"
    )
    labels = brownfield.worker.get("kueue.x-k8s.io", "clusterqueues", "cluster-queue")["metadata"].get("labels")
    assert WORKER_LABEL not in (labels or {}), "nothing was relabelled"
