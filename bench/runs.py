"""Driving runs the way an operator would, but at once: start, approve the plan as soon as it is published, wait.

The bench never polls the ``status`` query: queries are answered by workflow
tasks on the same worker and would compete with the work being measured. It
follows the history (a server long poll) until the ``Stage`` search attribute
says the plan gate is open, asks ``status`` once for the plan hash, and answers
with the ``approve_plan`` update. As the worker's defaults (four-eyes, verified approvers) require, runs are
started on behalf of :data:`REQUESTER` and approved by the bench's client, :data:`APPROVER`, a second principal
signing its answers (:class:`tenantflow.starter.approvers.StandInOperators`).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel
from temporalio.client import WorkflowHandle

from tenantflow.bench.history import wait_for_stage
from tenantflow.models.gates import STARTED_BY_MEMO
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.status import RunOutcome
from tenantflow.models.tenant import TenantContract
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


async def onboard_once(api: TenantflowClient, contract: TenantContract) -> RunTiming:
    """Start one onboarding, auto-approve its plan, wait for its end; time it."""
    started = time.perf_counter()
    handle = await api.start_onboarding(contract, on_behalf_of=REQUESTER)
    try:
        await approve_when_open(api, handle)
        result: OnboardingResult = await api.result(handle.id, OnboardingResult)
        ok, message = result.status == RunOutcome.completed, result.message
    except Exception as exc:  # a failed run is a figure (failures), not a crash of the bench
        ok, message = False, f"{type(exc).__name__}: {exc}"
    return RunTiming(workflow_id=handle.id, seconds=time.perf_counter() - started, ok=ok, message=message)


async def offboard(api: TenantflowClient, contract: TenantContract) -> OffboardingResult:
    """Tear a bench tenant down with ``TenantOffboarding``, data purged: the lab is left as before."""
    handle = await api.client.start_workflow(
        TenantOffboarding.run,
        OffboardingInput(contract=contract, purge_data=True),
        id=offboarding_id(contract.slug),
        task_queue=api.task_queue,
        memo={STARTED_BY_MEMO: REQUESTER},
    )
    await approve_when_open(api, handle)
    await wait_for_stage(handle, "gate:confirm_purge")
    await api.answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result
