"""Driving runs the way an operator would, but at once: start, approve the plan as soon as it is published, wait.

The bench never polls the ``status`` query: queries are answered by workflow
tasks on the same worker and would compete with the work being measured. It
follows the history (a server long poll) until the ``Stage`` search attribute
says the plan gate is open, asks ``status`` once for the plan hash, and answers
with the ``approve_plan`` update. As the worker's defaults (four-eyes, verified approvers) require, runs are
started by :data:`REQUESTER`, signing the start, and approved by :data:`APPROVER`, a second principal signing its
answers (:class:`tenantflow.starter.approvers.StandInOperators`, whose two clients every function here takes).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel
from temporalio.client import WorkflowHandle

from tenantflow.bench.history import wait_for_stage
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.status import RunOutcome
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.approvers import OperatorClients
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.offboarding import TenantOffboarding

PLAN_GATE = "gate:approve_plan"
REQUESTER, APPROVER = "bench-requester", "bench-approver"


class RunTiming(BaseModel):
    """One onboarding as the bench saw it: wall time from start request to result, and how it ended."""

    workflow_id: str
    seconds: float
    ok: bool
    message: str = ""


async def approve_when_open(api: TenantflowClient, handle: WorkflowHandle[Any, Any]) -> None:
    """Wait for the plan gate through the history, then approve the published plan by its hash."""
    await wait_for_stage(handle, PLAN_GATE)
    status = await api.status(handle.id)
    assert status.plan_hash is not None, f"{handle.id} is at the plan gate without a plan"
    await api.approve(handle.id, status.plan_hash)


async def onboard_once(ops: OperatorClients, contract: TenantContract) -> RunTiming:
    """Start one onboarding (as the requester), auto-approve its plan (as the approver), wait for its end; time it."""
    started = time.perf_counter()
    handle = await ops.requester.start_onboarding(contract)
    try:
        await approve_when_open(ops.approver, handle)
        result: OnboardingResult = await ops.approver.result(handle.id, OnboardingResult)
        ok, message = result.status == RunOutcome.completed, result.message
    except Exception as exc:  # a failed run is a figure (failures), not a crash of the bench
        ok, message = False, f"{type(exc).__name__}: {exc}"
    return RunTiming(workflow_id=handle.id, seconds=time.perf_counter() - started, ok=ok, message=message)


async def offboard(ops: OperatorClients, contract: TenantContract) -> OffboardingResult:
    """Tear a bench tenant down with ``TenantOffboarding``, data purged: the lab is left as before."""
    workflow_id, api = offboarding_id(contract.slug), ops.approver
    arg = OffboardingInput(contract=contract, purge_data=True)
    handle = await api.client.start_workflow(
        TenantOffboarding.run,
        arg,
        id=workflow_id,
        task_queue=api.task_queue,
        memo=await ops.requester.start_memo(workflow_id, "TenantOffboarding", REQUESTER, arg),
    )
    await approve_when_open(api, handle)
    await wait_for_stage(handle, "gate:confirm_purge")
    await api.answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result
