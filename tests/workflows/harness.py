"""Running the onboarding workflows (and the read-only plan) against fake activities on a given Temporal environment."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.models.status import RunStatus
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import RunAlreadyActive, TenantflowClient
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.plan import TenantPlan
from tenantflow.workflows.record_reads import TenantRecords
from tenantflow.workflows.tenant_hold import TenantHold
from tests.workflows.fakes import FakeWorld


@asynccontextmanager
async def fake_worker(env: WorkflowEnvironment, world: FakeWorld) -> AsyncIterator[TenantflowClient]:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[TenantOnboarding, TenantOffboarding, TenantHold, TenantPlan, TenantRecords],
        activities=world.activities(),
    ):
        yield TenantflowClient(env.client, queue)


async def wait_for_stage(
    api: TenantflowClient, handle: WorkflowHandle[Any, Any], prefix: str, timeout_s: float = 30
) -> RunStatus:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await api.status(handle.id)
        if status.stage.startswith(prefix):
            return status
        if status.stage == "refused" != prefix:
            raise AssertionError(f"the run was refused, never reaching {prefix!r}: {status.message}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"stage {status.stage!r} never reached {prefix!r}: {status.message}")
        await asyncio.sleep(0.05)


async def one_holds(
    api: TenantflowClient, started: list[WorkflowHandle[Any, Any] | BaseException], timeout_s: float = 60
) -> tuple[WorkflowHandle[Any, Any], list[str]]:
    """Of runs of one tenant started together (a start the client refused stands as its exception), the one that
    holds the tenant, at its plan gate, and what each other was told: the client's ``RunAlreadyActive``, or the
    ``TenantHeld`` failure its run ended with (stage ``refused``). Fails unless exactly one holds it."""
    told = [str(s) for s in started if isinstance(s, BaseException)]
    assert all(isinstance(s, RunAlreadyActive) for s in started if isinstance(s, BaseException)), started
    holding: list[WorkflowHandle[Any, Any]] = []
    deadline = asyncio.get_running_loop().time() + timeout_s
    for handle in [s for s in started if not isinstance(s, BaseException)]:
        while (stage := (await api.status(handle.id)).stage) != "refused" and not stage.startswith("gate:"):
            assert asyncio.get_running_loop().time() < deadline, f"{handle.id} is at {stage!r}"
            await asyncio.sleep(0.05)
        if stage != "refused":
            holding.append(handle)
            continue
        try:
            await handle.result()
        except WorkflowFailureError as failed:
            told.append(str(failed.cause))
        else:
            raise AssertionError(f"{handle.id} was refused but completed")
    assert len(holding) == 1, (started, told)
    return holding[0], told


TASK_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
}


async def waiting_on_a_timer(handle: WorkflowHandle[Any, Any], timeout_s: float = 30) -> None:
    """Until the run's last event but its workflow tasks is a started timer: the gate's notification is done and its
    wait began (time skipped before that would pass before the escalation's timer exists)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        events = [e.event_type for e in (await handle.fetch_history()).events if e.event_type not in TASK_EVENTS]
        if events[-1] == EventType.EVENT_TYPE_TIMER_STARTED:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{handle.id} did not wait at its gate in {timeout_s} s: {events[-4:]}")
        await asyncio.sleep(0.05)


async def approved_onboarding(api: TenantflowClient, contract: TenantContract) -> WorkflowHandle[Any, Any]:
    """Start onboarding ``contract`` and approve its plan as soon as it is published."""
    handle = await api.start_onboarding(contract)
    status = await wait_for_stage(api, handle, "gate:approve_plan")
    assert status.plan_hash
    await api.approve(handle.id, status.plan_hash)
    return handle
