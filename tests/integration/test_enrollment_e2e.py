"""Greenfield enrollment of examples/worker-forecasting-us.yaml against the running lab (its own Hub and worker
API servers, the Hub's org-admin RBAC, the Hub and worker-agent controllers, the ``konduktor`` stand-in the
lab's ``lab.env`` names), then its decommission and ``worker reset``."""

from __future__ import annotations

import os
import subprocess
import uuid

from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.enrollment_workflows import (
    DecommissionInput,
    DecommissionResult,
    EnrollmentInput,
    EnrollmentResult,
)
from tenantflow.starter.contracts import load_enrollment
from tests.approvers import reviewer
from tests.enrollment.conftest import approve_printed_plan
from tests.labfixture import lab_worker
from tests.workflows.contract import EXAMPLES
from tests.workflows.harness import wait_for_stage


def kubectl(lab: LabEndpoints, context: str, *args: str) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", context, *args],
        env={**os.environ, **lab.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() or done.stderr.strip()


async def test_example_worker_enrolls_with_all_four_conditions(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> None:
    can_enroll = kubectl(lab, "hub", "-n", "forecasting", "auth", "can-i", "create", "bootstrapenrollments.trainy.ai")
    assert can_enroll == "yes"
    assert kubectl(lab, "hub", "auth", "can-i", "create", "organizations.trainy.ai").startswith("no")
    contract = load_enrollment(EXAMPLES / "worker-forecasting-us.yaml")
    async with lab_worker(dev_env.client, lab) as api:
        workflow_id = f"enroll/forecasting/forecasting-us-{uuid.uuid4().hex[:6]}"
        arg = EnrollmentInput(contract=contract, condition_budget_s=30)
        handle = await dev_env.client.start_workflow(
            "WorkerEnrollment",
            arg,
            id=workflow_id,
            task_queue=api.task_queue,
            result_type=EnrollmentResult,
            memo=await api.start_memo(workflow_id, "WorkerEnrollment", api.identity, arg),
        )
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await reviewer(api).approve(handle.id, status.plan_hash)
        await approve_printed_plan(api, handle)
        result: EnrollmentResult = await handle.result()
    assert {name: c.status for name, c in result.conditions.items()} == {
        "Registered": "True",
        "Connected": "True",
        "WorkerConfigured": "True",
        "DispatchReady": "True",
        "ObservabilityIngestHealthy": "Unknown",
    }
    used_at = kubectl(
        lab,
        "hub",
        "-n",
        "forecasting",
        "get",
        "bootstrapenrollment",
        "forecasting-us",
        "-o",
        "jsonpath={.status.usedAt}",
    )
    assert used_at
    assert (
        kubectl(
            lab,
            "worker",
            "-n",
            "trainy-system",
            "get",
            "deploy",
            "trainy-worker-agent",
            "-o",
            "jsonpath={.metadata.name}",
        )
        == "trainy-worker-agent"
    )
    assert kubectl(
        lab, "worker", "-n", "trainy-system", "get", "secret", "trainy-bootstrap", "-o", "jsonpath={.data}"
    ) in ("", "{}"), "the worker keeps no copy of the enrollment"

    async with lab_worker(dev_env.client, lab) as api:
        dec_id = f"decommission/forecasting/forecasting-us-{uuid.uuid4().hex[:6]}"
        dec_arg = DecommissionInput(contract=contract)
        dec = await dev_env.client.start_workflow(
            "WorkerDecommission",
            dec_arg,
            id=dec_id,
            task_queue=api.task_queue,
            result_type=DecommissionResult,
            memo=await api.start_memo(dec_id, "WorkerDecommission", api.identity, dec_arg),
        )
        status = await wait_for_stage(api, dec, "gate:approve_plan")
        await reviewer(api).approve(dec.id, status.plan_hash or "")
        done: DecommissionResult = await dec.result()
    assert done.status == "completed"
    assert "NotFound" in kubectl(lab, "hub", "-n", "forecasting", "get", "workercluster", "forecasting-us")
    assert "NotFound" in kubectl(lab, "worker", "get", "namespace", "trainy-system")
    for namespace, name in (
        ("cert-manager", "cert-manager"),
        ("victoria-metrics", "victoria-metrics-operator"),
        ("kueue-system", "kueue-controller-manager"),
    ):
        assert kubectl(lab, "worker", "-n", namespace, "get", "deploy", name, "-o", "jsonpath={.metadata.name}") == name
    assert (
        kubectl(
            lab, "worker", "get", "clusterqueues.kueue.x-k8s.io", "cluster-queue", "-o", "jsonpath={.metadata.name}"
        )
        == "cluster-queue"
    )
