"""Decommission writes nothing before its plan is approved, and reset applies exactly the approved dry run: the
text ``konduktor worker reset --dry-run`` printed, shown verbatim at the gate in whatever format the CLI uses. A dry
run that prints other text right before the reset sends the run back to the gate; one that prints nothing is
refused, and ``konduktor worker reset`` never runs."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.settings import settings
from tenantflow.lab.konduktor.cli import DIALECT_ENV
from tenantflow.models.enrollment_workflows import RESET_DRY_RUN, DecommissionInput, DecommissionResult
from tenantflow.models.gates import RejectPlan
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, wait_stage
from tests.enrollment.test_konduktor_cli import konduktor

LATE = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "late-agent", "namespace": "trainy-system", "labels": {"trainy.ai/installed-by": "konduktor"}},
}


async def enrolled_then_decommission(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, DecommissionResult]:
    await (await start_approved(client, queue, lab.contract(), condition_budget_s=20)).result()
    return await client.start_workflow(
        "WorkerDecommission",
        DecommissionInput(contract=lab.contract()),
        id=f"decommission/forecasting/{uuid.uuid4().hex[:6]}",
        task_queue=queue,
        result_type=DecommissionResult,
    )


async def reopened_by_a_late_agent(
    client: Client, queue: str, lab: Lab
) -> tuple[WorkflowHandle[Any, DecommissionResult], RunStatus, RunStatus]:
    """A decommission whose first plan is approved after an agent ServiceAccount appeared: the run, its first gate
    and the gate it reopens with the changed dry run (nothing reset in between)."""
    dec = await enrolled_then_decommission(client, queue, lab)
    first = await wait_stage(dec, "gate:approve_plan")
    lab.worker.create(LATE, "trainy-system")
    await dec.execute_update("approve_plan", {"plan_hash": first.plan_hash})
    again = await wait_stage(dec, "gate:approve_plan")
    while again.plan_hash == first.plan_hash:
        again = await wait_stage(dec, "gate:approve_plan")
    assert "worker worker reset" not in lab.konduktor_calls(), "nothing was reset"
    return dec, first, again


async def test_rejected_decommission_writes_nothing(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        status = await wait_stage(dec, "gate:approve_plan")
        assert status.plan is not None
        assert {(s.layer, s.kind, s.action, s.detail.get("hub")) for s in status.plan.steps if s.layer == "hub"} == {
            ("hub", "WorkerCluster", "delete", "hub"),
            ("hub", "BootstrapEnrollment", "delete", "hub"),
        }, "each Hub step names the Hub, so the approval binds it"
        before = greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
        await dec.execute_update("reject_plan", RejectPlan(reason="not today"))
        result = await dec.result()
    assert result.status == "rejected" and not result.removed
    after = greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert after["spec"] == before["spec"] and after["metadata"].get("annotations") == before["metadata"].get(
        "annotations"
    ), "the WorkerCluster was neither cordoned nor removed"


async def test_a_dry_run_changed_since_approval_reopens_the_gate(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        dec, _, again = await reopened_by_a_late_agent(client, queue, greenfield)
        assert greenfield.worker.get("", "serviceaccounts", "late-agent", "trainy-system")
        assert greenfield.worker.list("apps", "deployments", "trainy-system")
        [gate] = again.gates
        assert "+ delete ServiceAccount trainy-system/late-agent" in gate.description, "the gate shows the difference"
        assert dry_run(again)["dry_run"] in gate.description
        await dec.execute_update("approve_plan", {"plan_hash": again.plan_hash})
        result = await dec.result()
    assert result.status == "completed" and result.plan_hash == again.plan_hash
    assert greenfield.konduktor_calls().count("worker worker reset") == 1
    assert not greenfield.worker.list("", "serviceaccounts", "trainy-system"), "the late ServiceAccount was reset too"


async def test_a_dry_run_in_another_format_is_shown_verbatim_and_reset_once_approved(
    dev_env: WorkflowEnvironment, greenfield: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIALECT_ENV, "table")
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        status = await wait_stage(dec, "gate:approve_plan")
        printed = konduktor(greenfield, tmp_path, "worker", "worker", "reset", "--dry-run")
        assert printed.returncode == 0 and printed.stdout.startswith("Worker reset plan (dry run)\n")
        shown = dry_run(status)
        assert shown["dry_run"] == printed.stdout.rstrip("\n")
        assert shown["sha256"] == hashlib.sha256(printed.stdout.rstrip("\n").encode()).hexdigest()
        [gate] = status.gates
        assert printed.stdout.rstrip("\n") in gate.description, "the gate shows the dry run as the CLI printed it"
        assert status.plan is not None
        assert ("delete", "Deployment", "trainy-system", "trainy-worker-agent") in {
            (s.action, s.kind, s.namespace, s.name) for s in status.plan.steps
        }, "the table's rows are read as the plan's summary"
        assert "worker worker reset" not in greenfield.konduktor_calls()
        await dec.execute_update("approve_plan", {"plan_hash": status.plan_hash})
        result = await dec.result()
    assert result.status == "completed"
    calls = greenfield.konduktor_calls()
    assert calls.count("worker worker reset") == 1 and calls[-2:] == [
        "worker worker reset --dry-run",
        "worker worker reset",
    ], "the reset runs right after a dry run that printed the approved text"
    assert ("Deployment", "trainy-system", "trainy-worker-agent", "deleted") in {
        (r.kind, r.namespace, r.name, r.outcome) for r in result.removed
    }
    assert not greenfield.worker.list("apps", "deployments", "trainy-system")


async def test_an_empty_dry_run_is_refused_before_the_gate_and_nothing_is_reset(
    dev_env: WorkflowEnvironment, greenfield: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIALECT_ENV, "quiet")
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        kind, status = await failure(dec)
    assert kind == "ResetPlanUnreadable"
    [failed] = [s for s in status.steps if s.name == "worker.reset_plan"]
    assert failed.state == "failed" and "printed nothing on stdout" in failed.error
    calls = greenfield.konduktor_calls()
    assert calls[-1] == "worker worker reset --dry-run" and "worker worker reset" not in calls, "nothing after it"
    assert greenfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert greenfield.worker.list("apps", "deployments", "trainy-system")


async def test_a_dry_run_emptied_after_approval_is_refused_and_nothing_is_reset(
    dev_env: WorkflowEnvironment, greenfield: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with enrollment_worker(dev_env) as (client, queue):
        dec = await enrolled_then_decommission(client, queue, greenfield)
        status = await wait_stage(dec, "gate:approve_plan")
        monkeypatch.setenv(DIALECT_ENV, "quiet")
        await dec.execute_update("approve_plan", {"plan_hash": status.plan_hash})
        kind, status = await failure(dec)
    assert kind == "ResetPlanUnreadable"
    [failed] = [s for s in status.steps if s.name == "worker.reset_approved"]
    assert failed.state == "failed"
    assert "worker worker reset" not in greenfield.konduktor_calls()
    assert greenfield.worker.list("apps", "deployments", "trainy-system"), "nothing was reset"


def dry_run(status: RunStatus) -> dict[str, str]:
    """The detail of the plan's step that holds the reset dry run as printed (``dry_run``) and its ``sha256``."""
    assert status.plan is not None
    [step] = [s for s in status.plan.steps if s.kind == RESET_DRY_RUN]
    return step.detail


async def test_a_table_dry_run_changed_since_approval_reopens_the_gate(
    dev_env: WorkflowEnvironment, greenfield: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIALECT_ENV, "table")
    async with enrollment_worker(dev_env) as (client, queue):
        dec, first, again = await reopened_by_a_late_agent(client, queue, greenfield)
        [gate] = again.gates
        shown = dry_run(again)["dry_run"]
        assert shown.startswith("Worker reset plan (dry run)\n") and "late-agent" in shown
        assert shown in gate.description and "late-agent" not in dry_run(first)["dry_run"]
        await dec.execute_update("approve_plan", {"plan_hash": again.plan_hash})
        result = await dec.result()
    assert result.status == "completed" and greenfield.konduktor_calls().count("worker worker reset") == 1
    assert not greenfield.worker.list("", "serviceaccounts", "trainy-system")


async def test_a_dry_run_nothing_reads_as_an_action_is_refused_and_nothing_is_reset(
    dev_env: WorkflowEnvironment, greenfield: Lab, tmp_path: Path
) -> None:
    """A CLI whose dry run is prose (no line reads as an action on an object): no plan to approve, no reset."""
    spy = os.environ["KONDUKTOR_BIN"]
    prose = tmp_path / "konduktor-prose"
    prose.write_text(f"""#!/bin/sh
if [ "$5 $6 $7" = "worker reset --dry-run" ]; then
  echo "Resetting this worker would remove every Trainy component it runs."; echo "Nothing was changed."; exit 0
fi
exec "{spy}" "$@"
""")
    prose.chmod(0o755)
    async with enrollment_worker(dev_env) as (client, queue):
        await (await start_approved(client, queue, greenfield.contract(), condition_budget_s=20)).result()
        os.environ["KONDUKTOR_BIN"] = str(prose)
        settings.cache_clear()
        dec = await client.start_workflow(
            "WorkerDecommission",
            DecommissionInput(contract=greenfield.contract()),
            id=f"decommission/forecasting/{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=DecommissionResult,
        )
        kind, status = await failure(dec)
    assert kind == "ResetPlanUnreadable"
    [failed] = [s for s in status.steps if s.name == "worker.reset_plan"]
    assert "Nothing was changed." in failed.error, "the error shows what the CLI printed"
    assert "worker worker reset" not in greenfield.konduktor_calls()
    assert greenfield.worker.list("apps", "deployments", "trainy-system"), "nothing was reset"
