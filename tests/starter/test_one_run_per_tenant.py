"""An onboarding and an offboarding of one tenant never run together (:mod:`starter.exclusive`): the run started
second is withdrawn before any write and the caller is told which run holds the tenant; two starts at the same
moment leave exactly one running. Dev server, no worker: the runs wait before their first task."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import RunAlreadyActive, TenantflowClient
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant


async def state(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionStatus | None:
    return (await handle.describe()).status


async def test_an_offboarding_started_while_the_tenant_is_onboarded_is_withdrawn(dev_env: WorkflowEnvironment) -> None:
    api = TenantflowClient(dev_env.client, f"no-worker-{uuid.uuid4().hex[:8]}")
    tenant = example_tenant(unique_slug())
    onboarding = await api.start_onboarding(tenant)
    with pytest.raises(RunAlreadyActive, match=f"tenant/{tenant.slug} of the same tenant is in progress"):
        await api.start_offboarding(tenant, purge_data=True)
    assert await state(api.handle(f"offboard/{tenant.slug}")) == WorkflowExecutionStatus.TERMINATED
    assert await state(onboarding) == WorkflowExecutionStatus.RUNNING
    await onboarding.terminate("test done")
    offboarding = await api.start_offboarding(tenant)
    assert await state(offboarding) == WorkflowExecutionStatus.RUNNING, "the tenant is free once the onboarding ended"
    with pytest.raises(RunAlreadyActive, match=f"offboard/{tenant.slug} of the same tenant is in progress"):
        await api.start_onboarding(tenant)
    await offboarding.terminate("test done")


async def test_an_onboarding_and_an_offboarding_started_together_leave_one_running(
    dev_env: WorkflowEnvironment,
) -> None:
    api = TenantflowClient(dev_env.client, f"no-worker-{uuid.uuid4().hex[:8]}")
    tenant = example_tenant(unique_slug())
    started = await asyncio.gather(api.start_onboarding(tenant), api.start_offboarding(tenant), return_exceptions=True)
    refused = [s for s in started if isinstance(s, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], RunAlreadyActive), started
    running = [s for s in started if not isinstance(s, BaseException)]
    assert [await state(h) for h in running] == [WorkflowExecutionStatus.RUNNING]
    await running[0].terminate("test done")
