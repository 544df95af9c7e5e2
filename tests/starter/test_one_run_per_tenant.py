"""An onboarding and an offboarding of one tenant never run together: tenantflow's client starts neither while
the other runs (:mod:`starter.exclusive`) and tells the caller which run holds the tenant. Dev server, no worker:
the runs wait before their first task. (Two starts at the same moment both pass this check; the runs' hold lets
one of them run: ``tests/workflows/test_tenant_hold.py``.)"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import RunAlreadyActive, TenantflowClient
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant


async def state(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionStatus | None:
    return (await handle.describe()).status


async def never_started(handle: WorkflowHandle[Any, Any]) -> bool:
    with pytest.raises(RPCError) as missing:
        await handle.describe()
    return missing.value.status == RPCStatusCode.NOT_FOUND


async def test_an_offboarding_is_not_started_while_the_tenant_is_onboarded(dev_env: WorkflowEnvironment) -> None:
    api = TenantflowClient(dev_env.client, f"no-worker-{uuid.uuid4().hex[:8]}")
    tenant = example_tenant(unique_slug())
    onboarding = await api.start_onboarding(tenant)
    with pytest.raises(RunAlreadyActive, match=f"tenant/{tenant.slug} of the same tenant is in progress"):
        await api.start_offboarding(tenant, purge_data=True)
    assert await never_started(api.handle(f"offboard/{tenant.slug}"))
    assert await state(onboarding) == WorkflowExecutionStatus.RUNNING
    await onboarding.terminate("test done")
    offboarding = await api.start_offboarding(tenant)
    assert await state(offboarding) == WorkflowExecutionStatus.RUNNING, "the tenant is free once the onboarding ended"
    with pytest.raises(RunAlreadyActive, match=f"offboard/{tenant.slug} of the same tenant is in progress"):
        await api.start_onboarding(tenant)
    await offboarding.terminate("test done")
