"""One run per tenant is kept by the runs themselves (``workflows/tenant_hold.py``), not by the starting client: a
run started with a plain Temporal client while another run of the tenant holds it ends before any activity,
naming the holder; once the holder ended the tenant can be run again; the offboarding the lifecycle starts at
expiry waits for the holder instead of failing. Dev server, fake activities."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.records import hold, lifecycle
from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.run_ids import hold_id, lifecycle_id, offboarding_id, onboarding_id
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.starter.conftest import unique_slug
from tests.workflows.claim_twice import ClaimTwice
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import one_holds, wait_for_stage
from tests.workflows.term_parent import OffboardingParent, start_as_child


@asynccontextmanager
async def hold_worker(env: WorkflowEnvironment, world: FakeWorld) -> AsyncIterator[TenantflowClient]:
    """A worker of the tenant runs and their hold, with the fakes and the lifecycle's real wait activity."""
    queue = f"hold-{uuid.uuid4().hex[:8]}"
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[TenantOnboarding, TenantOffboarding, TenantHold],
        activities=[*world.activities(), lifecycle.wait_tenant_run],
    ):
        yield TenantflowClient(env.client, queue)


async def scheduled(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The activities the run scheduled (local activities aside: the hold's question only reads Temporal)."""
    events = (await handle.fetch_history()).events
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def refusal(api: TenantflowClient, handle: WorkflowHandle[Any, Any]) -> ApplicationError:
    """The failure the run ended with, once its stage says it was refused (else the wait fails)."""
    await wait_for_stage(api, handle, "refused")
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


async def test_a_run_started_past_the_client_ends_before_any_write_naming_the_holder(
    dev_env: WorkflowEnvironment,
) -> None:
    tenant = example_tenant(unique_slug())
    async with hold_worker(dev_env, FakeWorld()) as api:
        onboarding = await api.start_onboarding(tenant)
        await wait_for_stage(api, onboarding, "gate:approve_plan")
        raw = await api.client.start_workflow(
            "TenantOffboarding",
            OffboardingInput(contract=tenant),
            id=offboarding_id(tenant.slug),
            task_queue=api.task_queue,
        )
        refused = await refusal(api, raw)
        assert refused.type == "TenantHeld" and refused.non_retryable, refused
        assert f"tenant/{tenant.slug} (TenantOnboarding) of the same tenant is in progress" in refused.message
        assert "ended before any write" in refused.message
        assert await scheduled(raw) == [], "the refused run scheduled an activity"

        await api.reject(onboarding.id, "the tenant is offboarded instead")
        await onboarding.result()
        again = await api.client.start_workflow(
            "TenantOffboarding",
            OffboardingInput(contract=tenant),
            id=offboarding_id(tenant.slug),
            task_queue=api.task_queue,
        )
        await wait_for_stage(api, again, "gate:approve_plan")
        second = await api.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=tenant),
            id=onboarding_id(tenant.slug),
            task_queue=api.task_queue,
        )
        assert f"offboard/{tenant.slug} (TenantOffboarding)" in (await refusal(api, second)).message
        await again.terminate("test done")
        third = await api.start_onboarding(tenant)
        await wait_for_stage(api, third, "gate:approve_plan")
        await third.terminate("test done")


async def test_the_lifecycles_offboarding_waits_for_the_holder(dev_env: WorkflowEnvironment) -> None:
    tenant = example_tenant(unique_slug())
    async with hold_worker(dev_env, FakeWorld(present=True)) as api:
        onboarding = await api.start_onboarding(tenant)
        await wait_for_stage(api, onboarding, "gate:approve_plan")
        arg = OffboardingInput(contract=tenant)
        await start_as_child(api.client, OffboardingParent, api.task_queue, arg, lifecycle_id(tenant.slug))
        offboarding = api.client.get_workflow_handle(offboarding_id(tenant.slug))
        waiting = await wait_for_stage(api, offboarding, "waiting")
        said = [step.summary for step in waiting.steps if step.name == "lifecycle.wait_tenant_run"]
        assert said == [f"wait while tenant/{tenant.slug} holds {tenant.slug}"], waiting.steps
        assert await scheduled(offboarding) == ["lifecycle.wait_tenant_run"]
        await api.reject(onboarding.id, "the term ended")
        await wait_for_stage(api, offboarding, "gate:approve_plan")
        await offboarding.terminate("test done")


async def test_an_onboarding_and_an_offboarding_started_together_leave_one_holding(
    dev_env: WorkflowEnvironment,
) -> None:
    tenant = example_tenant(unique_slug())
    async with hold_worker(dev_env, FakeWorld()) as api:
        started = await asyncio.gather(
            api.start_onboarding(tenant), api.start_offboarding(tenant), return_exceptions=True
        )
        holder, told = await one_holds(api, list(started))
        assert len(told) == 1 and "of the same tenant is in progress" in told[0], told
        await holder.terminate("test done")


async def test_a_run_that_finds_the_hold_its_own_goes_on_instead_of_refusing_itself(
    dev_env: WorkflowEnvironment,
) -> None:
    slug = unique_slug()
    queue = f"hold-{uuid.uuid4().hex[:8]}"
    async with Worker(
        dev_env.client, task_queue=queue, workflows=[ClaimTwice, TenantHold], activities=[hold.tenant_holder]
    ):
        handle = await dev_env.client.start_workflow(ClaimTwice.run, slug, id=f"claim-twice/{slug}", task_queue=queue)
        assert await handle.result() != "refused"
        held = await dev_env.client.get_workflow_handle(hold_id(slug)).describe()
        assert (held.parent_id, held.parent_run_id) == (handle.id, handle.result_run_id)
