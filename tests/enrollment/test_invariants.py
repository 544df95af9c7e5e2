"""Brownfield: a recorded workload whose UID or Running status changes while Kueue/JobSet converge stops the run
with an InvariantBroken finding; the WorkerCluster stays cordoned and nothing is adopted."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.kubeapi.store import ObjectKey, Store
from tenantflow.models.enrollment_workflows import WORKER_LABEL
from tenantflow.models.gates import GateAnswer
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, wait_stage

MERGE = "application/merge-patch+json"


def recreate_workload(worker: Store) -> None:
    old = worker.get("kueue.x-k8s.io", "workloads", "jobset-train-llm", "forecasting")
    worker.delete("kueue.x-k8s.io", "workloads", "jobset-train-llm", "forecasting")
    worker.seed([old])


def stop_running_job(worker: Store) -> None:
    job = worker.get("batch", "jobs", "eval-sweep-workers-0", "forecasting")
    worker.update_status({**job, "status": {"active": 0, "ready": 0, "failed": 1}})


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        (recreate_workload, "Workload/forecasting/jobset-train-llm changed"),
        (stop_running_job, "Job/forecasting/eval-sweep-workers-0 changed"),
    ],
    ids=["workload-recreated", "job-stopped-running"],
)
async def test_changed_work_during_convergence_stops_cordoned(
    dev_env: WorkflowEnvironment, brownfield: Lab, change: Callable[[Store], None], expect: str
) -> None:
    done: list[bool] = []
    organization = brownfield.hub.get("trainy.ai", "organizations", "forecasting")
    selected = f"kueue:{organization['spec']['kueueVersion']}"

    def on_upgrade(_event: str, key: ObjectKey, obj: dict[str, object]) -> None:
        """The moment the agent moves Kueue to the organization image, someone disturbs the recorded work."""
        if key.name == "kueue-controller-manager" and not done and selected in str(obj.get("spec")):
            done.append(True)
            change(brownfield.worker)

    brownfield.worker.subscribe(on_upgrade)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, brownfield.contract(brownfield=True), condition_budget_s=20)
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        kind, status = await failure(handle)
    assert done
    assert kind == "InvariantBroken"
    assert status.stage == "stopped-invariant"
    [finding] = [f for f in status.findings if f.check == "invariants"]
    assert not finding.ok and expect in finding.message and "cordoned" in finding.fix
    steps = [s.name for s in status.steps]
    assert [s.name for s in status.steps if s.state == "failed"] == ["worker.wait_convergence"]
    assert not {"worker.adopt", "hub.select_preset", "worker.uninstall"} & set(steps)
    wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert wc["spec"]["cordoned"] is True
    for resource in (
        "resourceflavors",
        "clusterqueues",
        "admissionchecks",
        "provisioningrequestconfigs",
        "localqueues",
    ):
        assert not brownfield.worker.list("kueue.x-k8s.io", resource, label_selector=WORKER_LABEL)
