"""Decommission and reset of a brownfield worker through the konduktor CLI: ``cluster cordon``,
``cluster decommission --yes``, ``worker reset --dry-run`` as the plan, ``worker reset`` after approval; the
customer's work, Kueue and JobSet objects, cert-manager and the shared VictoriaMetrics operator stay."""

from __future__ import annotations

import uuid

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import (
    MANAGED_BY,
    RESET_DRY_RUN,
    WORKER_LABEL,
    DecommissionInput,
    DecommissionResult,
)
from tenantflow.models.gates import ApprovePlan, GateAnswer
from tests.enrollment.conftest import Lab, enrollment_worker, start_approved, wait_stage
from tests.enrollment.test_brownfield import PRESET, uids


async def test_brownfield_decommission_and_reset_leave_the_customers_world(
    dev_env: WorkflowEnvironment, brownfield: Lab
) -> None:
    lab = brownfield
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, lab.contract(brownfield=True), condition_budget_s=20)
        for gate in ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions"):
            await wait_stage(handle, f"gate:{gate}")
            await handle.execute_update("answer_gate", args=[gate, GateAnswer()])
        await handle.result()
        enrolled = uids(lab)
        earlier = len(lab.konduktor_calls())
        dec = await client.start_workflow(
            "WorkerDecommission",
            DecommissionInput(contract=lab.contract()),
            id=f"decommission/forecasting/{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=DecommissionResult,
        )
        status = await wait_stage(dec, "gate:approve_plan")
        assert status.plan is not None
        plan = {
            (s.action, s.kind, s.namespace, s.name)
            for s in status.plan.steps
            if s.layer == "worker" and s.kind != RESET_DRY_RUN  # the dry run's text: what the approval binds
        }
        assert ("leave", "Deployment", "victoria-metrics", "victoria-metrics-operator") in plan
        assert ("leave", "Deployment", "cert-manager", "cert-manager") in plan
        assert ("delete", "Deployment", "trainy-system", "trainy-worker-agent") in plan
        assert {(kind, name) for action, kind, _, name in plan if action == "update"} == {
            ("ResourceFlavor", "default-flavor"),
            ("ClusterQueue", "cluster-queue"),
            ("AdmissionCheck", "dws-prov"),
            ("ProvisioningRequestConfig", "dws-config"),
            ("LocalQueue", "user-queue"),
        }
        await dec.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        result = await dec.result()
    assert result.status == "completed"
    calls = lab.konduktor_calls()[earlier:]
    assert calls.index("hub cluster cordon") < calls.index("hub cluster decommission")
    assert calls.index("worker worker reset --dry-run") < calls.index("worker worker reset")
    assert uids(lab) == enrolled, "the customer's JobSets, Jobs, Workloads and Kueue objects are the same objects"
    for resource, name, namespace in PRESET:
        labels = lab.worker.get("kueue.x-k8s.io", resource, name, namespace)["metadata"].get("labels") or {}
        assert MANAGED_BY not in labels and WORKER_LABEL not in labels
    assert all(j["status"]["active"] == 1 for j in lab.worker.list("batch", "jobs", "forecasting"))
    deployments = {d["metadata"]["name"] for d in lab.worker.list("apps", "deployments")}
    assert deployments == {
        "cert-manager",
        "victoria-metrics-operator",
        "kueue-controller-manager",
        "jobset-controller-manager",
    }
    assert not lab.worker.list("", "namespaces", label_selector="trainy.ai/installed-by")
    assert not lab.hub.list("trainy.ai", "workerclusters", "forecasting")
    assert not lab.hub.list("trainy.ai", "bootstrapenrollments", "forecasting")
