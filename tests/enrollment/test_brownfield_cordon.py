"""Never a silent skip: a brownfield enrollment that cannot cordon the new WorkerCluster stops with submissions
still paused and a finding saying what to do."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import GateAnswer
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, start_lab, wait_stage


@pytest.fixture
def brownfield_no_agent(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=True, agent=False)


async def stopped(dev_env: WorkflowEnvironment, lab: Lab) -> tuple[str, RunStatus]:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, lab.contract(brownfield=True), condition_budget_s=2)
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        return await failure(handle)


def the_finding(status: RunStatus) -> str:
    assert status.stage == "stopped-not-cordoned"
    [finding] = [f for f in status.findings if f.check == "brownfield.cordon"]
    assert "NOT cordoned" in finding.message
    assert "keep every organization submission path paused" in finding.fix
    assert "konduktor --context HUB cluster cordon forecasting-us -n forecasting" in finding.fix
    assert "resume_submissions" not in {s.name for s in status.steps}
    return finding.message


async def test_no_workercluster_stops_instead_of_skipping_the_cordon(
    dev_env: WorkflowEnvironment, brownfield_no_agent: Lab
) -> None:
    kind, status = await stopped(dev_env, brownfield_no_agent)
    assert kind == "CordonFailed"
    assert "did not appear within 2 s" in the_finding(status)


async def test_a_failing_cordon_stops_the_run(dev_env: WorkflowEnvironment, brownfield: Lab) -> None:
    brownfield.fault(
        "hub",
        [
            {
                "path": r"/namespaces/forecasting/workerclusters/forecasting-us$",
                "methods": ["PATCH"],
                "error_rate": 1.0,
                "error_status": 403,
            }
        ],
    )
    kind, status = await stopped(dev_env, brownfield)
    assert kind == "CordonFailed"
    assert "cordoning WorkerCluster forecasting/forecasting-us failed" in the_finding(status)
    wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert wc["spec"]["cordoned"] is False, "the run says so instead of pretending"
