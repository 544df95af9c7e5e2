"""Worker Deployment Versioning: a run started on version A finishes on A while version B takes the new runs, and
a tenant's lifecycle (auto-upgrade) moves to B, its continued run too.

Two production workers (:func:`worker.run.run_worker`, versioning from ``TENANTFLOW_DEPLOYMENT_NAME`` and
``TENANTFLOW_BUILD_ID``) poll one task queue of the dev server, each with fake activities of its own; the
deployment's current version is moved with the server's deployment API, as ``temporal worker deployment
set-current-version`` does.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType, RoutingConfigUpdateState, TaskQueueType, VersioningBehavior
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.records import lifecycle as lifecycle_steps
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import deployment_config, run_worker
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.approvers import as_tester, reviewer
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage
from tests.workflows.lifecycle_harness import carried_over

PINNED = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
AUTO_UPGRADE = VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE


@asynccontextmanager
async def versioned_worker(
    client: Client,
    queue: str,
    deployment: str,
    build_id: str,
    world: FakeWorld,
    workflows: Sequence[type] = (TenantOnboarding, TenantOffboarding, TenantHold),
    more: Sequence[Callable[..., Any]] = (),
) -> AsyncIterator[None]:
    settings = WorkerSettings(
        TENANTFLOW_TASK_QUEUE=queue, TENANTFLOW_DEPLOYMENT_NAME=deployment, TENANTFLOW_BUILD_ID=build_id
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_worker(settings, stop, client, workflows=workflows, activities=[*world.activities(), *more])
    )
    try:
        yield
    finally:
        stop.set()
        await task


SERVER_BUSY = frozenset({RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED})
"""gRPC statuses of a call the server did not get to answer (CI saw ``CANCELLED: operation was canceled``)."""

NOT_POLLED_YET = frozenset({RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION})
"""What setting a current version answers while the deployment or the version has had no poller yet."""


WEDGED_AFTER_S = 15.0
"""How long the deployment's routing update may stay IN_PROGRESS before :func:`set_current` reads the routing
from the task queue instead (it completes in about a second here)."""


async def set_current(client: Client, deployment: str, build_id: str, task_queue: str) -> None:
    """Make ``build_id`` the deployment's current version once its worker has polled (till then the server answers
    NOT_FOUND: "does your Worker Deployment have pollers?"), then wait until ``task_queue`` routes to it.

    Routing has reached the queue when the server says the routing update COMPLETED (every partition of every
    queue of the deployment has it). For temporalio/temporal#11842 (on a queue that serves workflows and
    activities, ``routingConfigUpdateState`` can stay IN_PROGRESS for ever although the queue already routes to
    the new version; a 300 s hang of tests/chaos/test_deploy.py here), once the update has been IN_PROGRESS for
    :data:`WEDGED_AFTER_S` the queue's own versioning data is enough: ``DescribeTaskQueue`` naming the build as
    current for both its workflow and its activity tasks.

    Neither wait has a deadline of its own: each ends on the server's state, and pytest-timeout stops a hang (a
    deadline shared by a worker process's start-up and the propagation failed on a loaded machine, cc35).
    """
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=deployment, build_id=build_id, identity="tenantflow-test"
    )
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            break
        except RPCError as err:
            if err.status not in NOT_POLLED_YET | SERVER_BUSY:
                raise
            await asyncio.sleep(0.2)
    wedged_at = time.monotonic() + WEDGED_AFTER_S
    while True:
        try:
            if await routing_completed(client, deployment):
                return
            if time.monotonic() > wedged_at and await queue_routes_to(client, deployment, build_id, task_queue):
                return
        except RPCError as err:  # a loaded dev server cancels or drops a call now and then: ask again
            if err.status not in SERVER_BUSY:
                raise
        await asyncio.sleep(0.1)


async def routing_completed(client: Client, deployment: str) -> bool:
    described = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
    info = (await client.workflow_service.describe_worker_deployment(described)).worker_deployment_info
    return info.routing_config_update_state == RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED


async def queue_routes_to(client: Client, deployment: str, build_id: str, task_queue: str) -> bool:
    """Whether ``task_queue``'s versioning data names ``build_id`` of ``deployment`` current for workflow and
    activity tasks."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        queue = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
            )
        )
        current = queue.versioning_info.current_deployment_version
        if (current.deployment_name, current.build_id) != (deployment, build_id):
            return False
    return True


async def task_versions(handle: WorkflowHandle[Any, Any]) -> set[tuple[str, int]]:
    """(build id, versioning behaviour) of every workflow task the run's history shows completed."""
    seen = set()
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            done = event.workflow_task_completed_event_attributes
            seen.add((done.deployment_version.build_id, done.versioning_behavior))
    return seen


async def continued_run(run: WorkflowHandle[Any, Any]) -> str:
    """The run id ``run`` continued as new with (its history's last event)."""
    last = (await run.fetch_history()).events[-1]
    return last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id


async def first_task_versions(run: WorkflowHandle[Any, Any]) -> set[tuple[str, int]]:
    """:func:`task_versions` once the run has completed a workflow task (pytest-timeout stops a run that never does)."""
    while not (seen := await task_versions(run)):
        await asyncio.sleep(0.1)
    return seen


async def test_a_run_started_on_version_a_finishes_on_a_while_b_takes_new_runs(dev_env: WorkflowEnvironment) -> None:
    client = dev_env.client
    queue, deployment = f"versioned-{uuid.uuid4().hex[:8]}", f"tenantflow-{uuid.uuid4().hex[:6]}"
    api = as_tester(client, queue)
    world_a, world_b = FakeWorld(), FakeWorld()
    async with versioned_worker(client, queue, deployment, "build-a", world_a):
        await set_current(client, deployment, "build-a", queue)
        old = await api.start_onboarding(example_tenant(f"tenant-v{uuid.uuid4().hex[:6]}"))
        old_plan = await wait_for_stage(api, old, "gate:approve_plan")
        async with versioned_worker(client, queue, deployment, "build-b", world_b):
            await set_current(client, deployment, "build-b", queue)
            assert await queue_routes_to(client, deployment, "build-b", queue)
            assert not await queue_routes_to(client, deployment, "build-a", queue)
            new = await api.start_onboarding(example_tenant(f"tenant-v{uuid.uuid4().hex[:6]}"))
            new_plan = await wait_for_stage(api, new, "gate:approve_plan")
            assert old_plan.plan_hash and new_plan.plan_hash
            await reviewer(api).approve(old.id, old_plan.plan_hash)
            await reviewer(api).approve(new.id, new_plan.plan_hash)
            old_result: OnboardingResult = await old.result()
            new_result: OnboardingResult = await new.result()
    assert old_result.status == new_result.status == "completed"
    assert await task_versions(old) == {("build-a", PINNED)}
    assert await task_versions(new) == {("build-b", PINNED)}
    assert [r.contract.slug for r in world_a.records] == [old_result.slug], "A ran the old run's activities"
    assert [r.contract.slug for r in world_b.records] == [new_result.slug], "B ran the new run's activities"
    assert "kube.namespace" in world_a.calls and "kube.namespace" in world_b.calls


async def test_a_lifecycle_started_on_a_moves_to_b_and_continues_as_new_there(dev_env: WorkflowEnvironment) -> None:
    """The onboarding (pinned) on A starts the lifecycle on A; once B is current, the renewal is served by B and
    the run it continues as lives on B (a pinned lifecycle would keep A across continue-as-new, for the term)."""
    client = dev_env.client
    queue, deployment = f"versioned-{uuid.uuid4().hex[:8]}", f"tenantflow-{uuid.uuid4().hex[:6]}"
    api, slug = as_tester(client, queue), f"tenant-l{uuid.uuid4().hex[:6]}"
    types = (TenantOnboarding, TenantOffboarding, TenantLifecycle)
    async with versioned_worker(client, queue, deployment, "build-a", FakeWorld(), types, lifecycle_steps.ACTIVITIES):
        await set_current(client, deployment, "build-a", queue)
        onboarding = await api.start_onboarding(example_tenant(slug))
        plan = await wait_for_stage(api, onboarding, "gate:approve_plan")
        await reviewer(api).approve(onboarding.id, plan.plan_hash or "")
        assert (await onboarding.result()).status == "completed"
        first = await api.term(slug)
        assert first is not None and not first.renewals
        lifecycle = client.get_workflow_handle(lifecycle_id(slug))
        first_run = client.get_workflow_handle(lifecycle.id, run_id=(await lifecycle.describe()).run_id)
        try:
            async with versioned_worker(
                client, queue, deployment, "build-b", FakeWorld(), types, lifecycle_steps.ACTIVITIES
            ):
                await set_current(client, deployment, "build-b", queue)
                asked = await api.renew(slug, 30, "next quarter")
                assert asked.pending_renewal is not None
                await reviewer(api).approve(lifecycle.id, asked.pending_renewal.plan_hash)
                carried = await carried_over(client, lifecycle.id, first_run.run_id or "")
                assert carried.term_end > first.term_end and len(carried.renewals) == 1
                continued = client.get_workflow_handle(lifecycle.id, run_id=await continued_run(first_run))
                assert await first_task_versions(continued) == {("build-b", AUTO_UPGRADE)}
                assert await task_versions(first_run) == {("build-a", AUTO_UPGRADE), ("build-b", AUTO_UPGRADE)}
        finally:
            await lifecycle.terminate("the test is over")
    assert await task_versions(onboarding) == {("build-a", PINNED)}


def test_a_deployment_name_without_a_build_id_is_refused() -> None:
    with pytest.raises(ValidationError, match="TENANTFLOW_BUILD_ID"):
        WorkerSettings(TENANTFLOW_DEPLOYMENT_NAME="tenantflow")
    assert deployment_config(WorkerSettings()) is None
