"""Driving whole runs as operators would: start (as the tester), wait for the plan, approve and answer gates (as the
reviewer, another principal, with proof: the worker's defaults require it), wait; and clearing a tenant a test may
have left (its open runs terminated, offboarded with its data)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from tenantflow.activities.common.recordstore import read_latest
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.plan import Plan
from tenantflow.models.records import RecordKey, RecordStatus, TenantRecord
from tenantflow.models.run_ids import lifecycle_id, offboarding_id, onboarding_id
from tenantflow.models.targets import KubeTarget
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


async def offboard(
    api: TenantflowClient, contract: TenantContract, purge: bool, plans: list[Plan] | None = None
) -> OffboardingResult:
    """Offboard ``contract``, approving its teardown plan (appended to ``plans`` when given) as the reviewer."""
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
    assert status.plan_hash and status.plan is not None
    if plans is not None:
        plans.append(status.plan)
    await reviewer(api).approve(handle.id, status.plan_hash)
    if purge:
        await wait_for_stage(api, handle, "gate:confirm_purge")
        await reviewer(api).answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result


async def terminate_runs_of(api: TenantflowClient, slug: str, reason: str) -> None:
    """Terminate the open runs of the tenant ``slug`` (its onboarding or change, lifecycle and offboarding); a run
    that is not open is left as it is (``WorkflowHandle.terminate``:
    https://python.temporal.io/temporalio.client.WorkflowHandle.html)."""
    for workflow_id in (onboarding_id(slug), lifecycle_id(slug), offboarding_id(slug)):
        try:
            await api.client.get_workflow_handle(workflow_id).terminate(reason=reason)
        except RPCError:
            continue  # no such run, or it is closed


async def offboard_recorded(api: TenantflowClient, cluster: KubeTarget, slug: str) -> bool:
    """Offboard ``slug`` with its data purged, as its latest record in ``cluster`` holds it, if that record says it
    is onboarded (to be called inside :func:`tests.labfixture.lab_worker`: the record is read from its lab); whether
    it offboarded."""
    record = read_latest(RecordKey.of_tenant(cluster, slug), TenantRecord)
    if record is None or record.status is not RecordStatus.onboarded:
        return False
    result = await offboard(api, record.contract, purge=True)
    assert result.status == "completed", result.message
    return True


async def clear_tenant(api: TenantflowClient, cluster: KubeTarget, slug: str, reason: str) -> None:
    """The tenant ``slug`` gone from the lab: its open runs terminated, then offboarded if its record holds it."""
    await terminate_runs_of(api, slug, reason)
    await offboard_recorded(api, cluster, slug)


@asynccontextmanager
async def offboarded_after(api: TenantflowClient, cluster: KubeTarget, slug: str) -> AsyncIterator[None]:
    """The tenant ``slug`` cleared (:func:`clear_tenant`) when the block ends, whatever happened, for the lab's next
    tests. Failing to clear it fails a block that passed; after a block that failed it is a warning, not to hide
    the block's failure."""
    passed = False
    try:
        yield
        passed = True
    finally:
        try:
            await clear_tenant(api, cluster, slug, "the test is over")
        except Exception as exc:
            if passed:
                raise
            warnings.warn(f"{slug} may be left on the lab: {exc!r}", stacklevel=1)
