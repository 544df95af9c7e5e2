"""Brownfield: running work keeps UIDs and status, the five objects are adopted in place, no canary before uncordon."""

from __future__ import annotations

import base64
import re

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import ORIGIN_LABEL, WORKER_LABEL, EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan, GateAnswer
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage

PRESET = [
    ("resourceflavors", "default-flavor", None),
    ("clusterqueues", "cluster-queue", None),
    ("admissionchecks", "dws-prov", None),
    ("provisioningrequestconfigs", "dws-config", None),
    ("localqueues", "user-queue", "forecasting"),
]


def decoded(history: str) -> str:
    """The history JSON plus every base64 payload in it, decoded."""
    parts = [history]
    for value in re.findall(r'"data": "([A-Za-z0-9+/=]+)"', history):
        parts.append(base64.b64decode(value).decode(errors="replace"))
    return "\n".join(parts)


def uids(lab: Lab) -> dict[str, str]:
    out = {f"{r}/{n}": lab.worker.get("kueue.x-k8s.io", r, n, ns)["metadata"]["uid"] for r, n, ns in PRESET}
    for group, res in (("jobset.x-k8s.io", "jobsets"), ("batch", "jobs"), ("kueue.x-k8s.io", "workloads")):
        out |= {f"{res}/{o['metadata']['name']}": o["metadata"]["uid"] for o in lab.worker.list(group, res)}
    return out


async def test_brownfield_adopts_in_place(dev_env: WorkflowEnvironment, brownfield: Lab) -> None:
    before = uids(brownfield)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=brownfield.contract(brownfield=True), condition_budget_s=20),
            id="enroll/forecasting/forecasting-us-bf",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        await wait_stage(handle, "gate:approve_adoption")
        await handle.execute_update("answer_gate", args=["approve_adoption", GateAnswer()])
        await wait_stage(handle, "gate:uncordon")
        assert not brownfield.worker.list("jobset.x-k8s.io", "jobsets", label_selector=ORIGIN_LABEL)
        assert not brownfield.hub.list("jobset.x-k8s.io", "jobsets")
        wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
        assert wc["spec"]["cordoned"] is True
        await handle.execute_update("answer_gate", args=["uncordon", GateAnswer()])
        await wait_stage(handle, "gate:resume_submissions")
        await handle.execute_update("answer_gate", args=["resume_submissions", GateAnswer()])
        result = await handle.result()
        assert len(result.adopted) == 5
        history = (await handle.fetch_history()).to_json()
        status = await handle.query("status", result_type=RunStatus)
    after = uids(brownfield)
    assert {k: after[k] for k in before} == before
    for group, res in (("batch", "jobs"),):
        assert all(o["status"]["active"] == 1 for o in brownfield.worker.list(group, res))
    for r, n, ns in PRESET:
        labels = brownfield.worker.get("kueue.x-k8s.io", r, n, ns)["metadata"]["labels"]
        assert labels[WORKER_LABEL] == "11-forecasting-forecasting-us"
    assert brownfield.worker.list("jobset.x-k8s.io", "jobsets", label_selector=ORIGIN_LABEL)
    text = decoded(history) + status.model_dump_json()
    assert "konduktor.bootstrap" in text and "kdk1." not in text
    assert not brownfield.hub.list("", "secrets", "forecasting")
    assert not brownfield.worker.get("", "secrets", "trainy-bootstrap", "trainy-system").get("data")
    assert not list(brownfield.tmp.glob("konduktor-bootstrap.*")), "the blob's private directory was left"


async def test_foreign_owner_stops_without_relabelling(dev_env: WorkflowEnvironment, brownfield: Lab) -> None:
    brownfield.worker.patch(
        "kueue.x-k8s.io",
        "clusterqueues",
        "cluster-queue",
        {"metadata": {"labels": {WORKER_LABEL: "5-other-worker-b"}}},
        "application/merge-patch+json",
    )
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=brownfield.contract(brownfield=True), condition_budget_s=20),
            id="enroll/forecasting/forecasting-us-foreign",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await handle.query("status", result_type=RunStatus)
    assert any("owned by WorkerCluster 5-other-worker-b" in f.message for f in status.findings)
    for r, n, ns in PRESET:
        labels = brownfield.worker.get("kueue.x-k8s.io", r, n, ns)["metadata"].get("labels") or {}
        assert labels.get(WORKER_LABEL) in (None, "5-other-worker-b")
