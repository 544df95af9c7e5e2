"""Driving whole runs as an operator would: start, wait for the plan, approve, answer gates, wait."""

from __future__ import annotations

from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.workflows.harness import wait_for_stage


async def onboard(api: TenantflowClient, contract: TenantContract) -> OnboardingResult:
    handle = await api.start_onboarding(contract)
    status = await api.wait_for_plan(handle.id)
    assert status.plan_hash, status
    await api.approve(handle.id, status.plan_hash)
    result: OnboardingResult = await handle.result()
    return result


async def offboard(api: TenantflowClient, contract: TenantContract, purge: bool) -> OffboardingResult:
    handle = await api.client.start_workflow(
        "TenantOffboarding",
        OffboardingInput(contract=contract, purge_data=purge),
        id=offboarding_id(contract.slug),
        task_queue=api.task_queue,
        result_type=OffboardingResult,
    )
    status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=60)
    assert status.plan_hash
    await api.approve(handle.id, status.plan_hash)
    if purge:
        await wait_for_stage(api, handle, "gate:confirm_purge")
        await api.answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result
