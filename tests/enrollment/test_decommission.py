"""Decommission + reset after a greenfield enrollment leaves exactly what the runbook says remains."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import (
    DecommissionInput,
    DecommissionResult,
    EnrollmentInput,
    EnrollmentResult,
)
from tenantflow.models.gates import ApprovePlan
from tenantflow.models.records import DEFAULT_NAMESPACE
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage


async def test_decommission_and_reset(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    contract = greenfield.contract()
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=contract, condition_budget_s=20),
            id="enroll/forecasting/forecasting-us-dc",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        await handle.result()
        greenfield.worker.delete("apps", "deployments", "trainy-worker-agent", "trainy-system")
        dec = await client.start_workflow(
            "WorkerDecommission",
            DecommissionInput(contract=contract),
            id="decommission/forecasting/forecasting-us",
            task_queue=queue,
            result_type=DecommissionResult,
        )
        status = await wait_stage(dec, "gate:approve_plan")
        assert status.plan is not None and any(s.action == "leave" for s in status.plan.steps)
        assert greenfield.hub.list("trainy.ai", "workerclusters", "forecasting"), "nothing written before approval"
        assert [s.name for s in status.steps] == ["worker.reset_plan"]
        await dec.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        await dec.result()
    namespaces = {n["metadata"]["name"] for n in greenfield.worker.list("", "namespaces")}
    assert namespaces == {
        "default",
        "forecasting",
        "kube-system",
        "cert-manager",
        "victoria-metrics",
        "kueue-system",
        "jobset-system",
        DEFAULT_NAMESPACE,
    }, "reset keeps the worker's record"
    deployments = {d["metadata"]["name"] for d in greenfield.worker.list("apps", "deployments")}
    assert deployments == {
        "cert-manager",
        "victoria-metrics-operator",
        "kueue-controller-manager",
        "jobset-controller-manager",
    }
    assert len(greenfield.worker.list("kueue.x-k8s.io", "clusterqueues")) == 1
    assert not greenfield.worker.list("kueue.x-k8s.io", "clusterqueues", label_selector="trainy.ai/managed-by")
    assert not greenfield.worker.list("rbac.authorization.k8s.io", "clusterroles")
    assert not greenfield.hub.list("trainy.ai", "workerclusters", "forecasting")
