"""Parents for tests that need a lifecycle (or an expiry offboarding) no onboarding started.

A ``TenantLifecycle`` without a parent fails at once, so a test that needs a term of its own choosing (an end, the
reminders) starts it through :class:`TermParent`, as an abandoned child like an onboarding's, from a worker of its
own on a queue of its own: the lifecycle itself runs on the queue of the worker under test.
:class:`OffboardingParent` is the attacker's version of a lifecycle at expiry: any workflow that starts
``offboard/<slug>`` as its child, naming itself as the starter.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ChildWorkflowError
from temporalio.worker import Worker
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import STARTED_BY_MEMO
    from tenantflow.models.lifecycle import LifecycleInput, LifecycleResult
    from tenantflow.models.offboarding import OffboardingInput
    from tenantflow.models.run_ids import lifecycle_id, offboarding_id
    from tenantflow.workflows.lifecycle import TenantLifecycle
    from tenantflow.workflows.offboarding import TenantOffboarding


@workflow.defn(name="TestTermParent")
class TermParent:
    """Start ``lifecycle/<slug>`` with the given input on ``task_queue`` and wait until it closes (the time-skipping
    server stops skipping time when a child reports its end to a parent that has closed)."""

    @workflow.run
    async def run(self, task_queue: str, params: LifecycleInput) -> None:
        child = await workflow.start_child_workflow(
            TenantLifecycle.run,
            params,
            id=lifecycle_id(params.contract.slug),
            task_queue=task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
        )
        with contextlib.suppress(ChildWorkflowError):
            await child


@workflow.defn(name="TestOffboardingParent")
class OffboardingParent:
    """Start ``offboard/<slug>`` of the given input on ``task_queue`` as its child, recorded as started by itself."""

    @workflow.run
    async def run(self, task_queue: str, params: OffboardingInput) -> None:
        await workflow.start_child_workflow(
            TenantOffboarding.run,
            params,
            id=offboarding_id(params.contract.slug),
            task_queue=task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
            memo={STARTED_BY_MEMO: workflow.info().workflow_id},
        )


async def start_as_child(
    client: Client,
    parent: type[TermParent] | type[OffboardingParent],
    task_queue: str,
    params: Any,
    parent_id: str,
    parent_queue: str | None = None,
) -> str:
    """Run ``parent`` as ``parent_id`` until it started its child on ``task_queue`` with ``params``: on
    ``parent_queue`` (whose worker runs ``parent``), else on a worker of its own for that long; the child's first run
    id. The parent is polled (its history), never awaited: on the time-skipping server awaiting a result lets time
    skip, and the child's timers with it."""
    queue = parent_queue or f"parent-{uuid.uuid4().hex[:8]}"
    async with contextlib.AsyncExitStack() as stack:
        if parent_queue is None:
            await stack.enter_async_context(Worker(client, task_queue=queue, workflows=[parent]))
        handle = await client.start_workflow(parent.run, args=[task_queue, params], id=parent_id, task_queue=queue)
        for _ in range(600):
            for event in (await handle.fetch_history()).events:
                if event.HasField("child_workflow_execution_started_event_attributes"):
                    return event.child_workflow_execution_started_event_attributes.workflow_execution.run_id
            await asyncio.sleep(0.05)
    raise AssertionError(f"{parent_id} started no child: {(await handle.describe()).status}")


async def start_lifecycle_child(
    client: Client, task_queue: str, params: LifecycleInput, parent_queue: str | None = None
) -> WorkflowHandle[Any, LifecycleResult]:
    """Start ``lifecycle/<slug>`` of ``params`` on ``task_queue`` as the child of a :class:`TermParent` (on
    ``parent_queue``, else on a worker of its own); its handle (following its continue-as-new,
    ``first_execution_run_id`` its first run)."""
    parent_id = f"term-parent/{params.contract.slug}/{uuid.uuid4().hex[:8]}"
    first = await start_as_child(client, TermParent, task_queue, params, parent_id, parent_queue)
    return client.get_workflow_handle(
        lifecycle_id(params.contract.slug), first_execution_run_id=first, result_type=LifecycleResult
    )
