"""The stand-in in its second dialect (``KONDUKTOR_LAB_DIALECT=table``: a titled table for a plan, a prompt with no
newline after it, no file form in ``--help``): greenfield and brownfield enrollments wait at ``approve_plan``
showing what ``konduktor worker bootstrap`` printed, verbatim; the CLI's prompt is answered only after that exact
plan is approved (another hash is refused), and a rejected plan is answered no and installs nothing."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.konduktor import worker_commands
from tenantflow.lab.konduktor.cli import DIALECT_ENV, TABLE_PROMPT
from tenantflow.lab.konduktor.rest import Rest
from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, failure, printed_plan, start_approved, wait_stage


@pytest.fixture(autouse=True)
def second_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DIALECT_ENV, "table")


async def started(client: Client, queue: str, lab: Lab, brownfield: bool) -> WorkflowHandle[Any, EnrollmentResult]:
    handle = await start_approved(client, queue, lab.contract(brownfield=brownfield), condition_budget_s=20)
    if brownfield:
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
    return handle


async def at_bootstrap_gate(handle: WorkflowHandle[Any, Any], lab: Lab) -> RunStatus:
    """The run's status once it shows the CLI's printed plan; checks it is the stand-in's text, verbatim."""
    status = await wait_stage(handle, "gate:approve_plan")
    while printed_plan(status) is None:
        status = await wait_stage(handle, "gate:approve_plan")
    printed = printed_plan(status)
    assert printed is not None
    lines = worker_commands.bootstrap_plan(Rest(str(lab.kubeconfig), "worker"), table=True)
    expected = "\n".join(lines) + "\n\n" + TABLE_PROMPT
    assert printed["printed"] == expected, "the plan as the CLI printed it, its open prompt included"
    assert printed["sha256"] == hashlib.sha256(expected.encode()).hexdigest()
    assert "positional blob" in printed["form"], "the second dialect's --help documents no file form"
    [gate] = status.gates
    assert expected in gate.description, "the gate shows the text verbatim"
    assert not lab.worker.list("apps", "deployments", "trainy-system"), "nothing installed before the approval"
    return status


async def approve_exactly(handle: WorkflowHandle[Any, Any], status: RunStatus) -> None:
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash="0123456789abcdef"))
    await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))


def answered_after_approval(result: EnrollmentResult, status: RunStatus, lab: Lab) -> None:
    printed = printed_plan(status)
    assert printed is not None
    [said] = [f for f in result.findings if f.check == "konduktor.bootstrap"]
    assert printed["sha256"] in said.message and "positional blob" in said.message
    assert status.plan_hash in {a.plan_hash for a in result.approvals}
    calls = lab.konduktor_calls()
    assert "worker worker bootstrap --help" in calls and calls[calls.index("worker worker bootstrap --help") + 1] == (
        "worker worker bootstrap"
    ), "the runbook's positional form"


async def test_greenfield_waits_at_the_printed_plan_and_completes_once_it_is_approved(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    async with enrollment_worker(dev_env, approve_bootstrap=False) as (client, queue):
        handle = await started(client, queue, greenfield, brownfield=False)
        status = await at_bootstrap_gate(handle, greenfield)
        await approve_exactly(handle, status)
        result = await handle.result()
    assert result.status == "completed"
    answered_after_approval(result, status, greenfield)
    assert greenfield.worker.list("apps", "deployments", "trainy-system")


async def test_brownfield_waits_at_the_printed_plan_and_completes_once_it_is_approved(
    dev_env: WorkflowEnvironment, brownfield: Lab
) -> None:
    async with enrollment_worker(dev_env, approve_bootstrap=False) as (client, queue):
        handle = await started(client, queue, brownfield, brownfield=True)
        status = await at_bootstrap_gate(handle, brownfield)
        await approve_exactly(handle, status)
        for gate in ("approve_adoption", "uncordon", "resume_submissions"):
            await wait_stage(handle, f"gate:{gate}")
            await handle.execute_update("answer_gate", args=[gate, GateAnswer()])
        result = await handle.result()
    assert result.status == "completed" and len(result.adopted) == 5
    answered_after_approval(result, status, brownfield)


async def test_a_rejected_printed_plan_is_answered_no_and_installs_nothing(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    async with enrollment_worker(dev_env, approve_bootstrap=False) as (client, queue):
        handle = await started(client, queue, greenfield, brownfield=False)
        await at_bootstrap_gate(handle, greenfield)
        await handle.execute_update("reject_plan", RejectPlan(reason="not this plan"))
        kind, _ = await failure(handle)
    assert kind == "BootstrapPlanRejected"
    assert not greenfield.worker.list("apps", "deployments", "trainy-system")
    assert "trainy-system" not in {n["metadata"]["name"] for n in greenfield.worker.list("", "namespaces")}


async def test_a_signalled_text_that_is_not_its_hash_is_dropped(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    """Someone reaching Temporal signals ``bootstrap_plan_printed`` first, pairing a harmless text with the hash the
    CLI's real plan will have (the stand-in's plan is predictable, as a real CLI's mostly is): were it taken, the gate
    would show the harmless text and its approval would answer the real CLI. The payload is refused, so the gate
    shows what the CLI printed."""
    lines = worker_commands.bootstrap_plan(Rest(str(greenfield.kubeconfig), "worker"), table=True)
    real = hashlib.sha256(("\n".join(lines) + "\n\n" + TABLE_PROMPT).encode()).hexdigest()
    async with enrollment_worker(dev_env, approve_bootstrap=False) as (client, queue):
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=greenfield.contract(brownfield=False), condition_budget_s=20),
            id=f"enroll/forecasting/forecasting-us-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        forged = {"text": "Nothing to install.", "sha256": real, "form": "positional blob"}
        await handle.signal("bootstrap_plan_printed", forged)
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        status = await at_bootstrap_gate(handle, greenfield)
        assert "Nothing to install." not in status.gates[0].description
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
        assert (await handle.result()).status == "completed"


async def test_rejecting_a_text_signalled_in_place_of_the_clis_answers_the_cli_no(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    """Someone reaching Temporal signals a self-consistent text while the gate shows the CLI's: the gate shows theirs
    instead, and the approver rejects it. The rejection rejects the bootstrap: the CLI waiting at its prompt for its
    own text is answered no and the run ends, instead of holding the CLI there with no gate open (the wait is
    bounded only so that the failing case ends)."""
    forged = "Nothing to install."
    async with enrollment_worker(dev_env, approve_bootstrap=False) as (client, queue):
        handle = await started(client, queue, greenfield, brownfield=False)
        await at_bootstrap_gate(handle, greenfield)
        sha = hashlib.sha256(forged.encode()).hexdigest()
        await handle.signal("bootstrap_plan_printed", {"text": forged, "sha256": sha, "form": "positional blob"})
        while (printed_plan(await wait_stage(handle, "gate:approve_plan")) or {}).get("sha256") != sha:
            await asyncio.sleep(0.2)
        await handle.execute_update("reject_plan", RejectPlan(reason="not what konduktor printed"))
        kind, _ = await asyncio.wait_for(failure(handle), timeout=90)
    assert kind == "BootstrapPlanRejected"
    assert not greenfield.worker.list("apps", "deployments", "trainy-system")
