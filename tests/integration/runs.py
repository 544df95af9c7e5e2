"""Driving whole runs as operators would: start (as the tester), wait for the plan, approve and answer gates (as the
reviewer, another principal, with proof: the worker's defaults require it), wait."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowHandle

from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer
from tests.workflows.harness import wait_for_stage


async def approved(api: TenantflowClient, contract: TenantContract) -> WorkflowHandle[Any, OnboardingResult]:
    """Start onboarding ``contract`` and approve its plan as the reviewer."""
    handle = await api.start_onboarding(contract)
    status = await api.wait_for_plan(handle.id)
    assert status.plan_hash, status
    await reviewer(api).approve(handle.id, status.plan_hash)
    return handle


async def onboard(api: TenantflowClient, contract: TenantContract) -> OnboardingResult:
    return await (await approved(api, contract)).result()


async def offboard(api: TenantflowClient, contract: TenantContract, purge: bool) -> OffboardingResult:
    workflow_id = offboarding_id(contract.slug)
    arg = OffboardingInput(contract=contract, purge_data=purge)
    handle = await api.client.start_workflow(
        "TenantOffboarding",
        arg,
        id=workflow_id,
        task_queue=api.task_queue,
        result_type=OffboardingResult,
        memo=await api.start_memo(workflow_id, "TenantOffboarding", api.identity, arg),
    )
    status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=60)
    assert status.plan_hash
    await reviewer(api).approve(handle.id, status.plan_hash)
    if purge:
        await wait_for_stage(api, handle, "gate:confirm_purge")
        await reviewer(api).answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result
