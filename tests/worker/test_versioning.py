"""Worker Deployment Versioning: a run started on version A finishes on A while version B takes the new runs.

Two production workers (:func:`worker.run.run_worker`, versioning from ``TENANTFLOW_DEPLOYMENT_NAME`` and
``TENANTFLOW_BUILD_ID``) poll one task queue of the dev server, each with fake activities of its own; the
deployment's current version is moved with the server's deployment API, as ``temporal worker deployment
set-current-version`` does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType, VersioningBehavior
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.onboarding import OnboardingResult
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import deployment_config, run_worker
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.approvers import as_tester, reviewer
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage


@asynccontextmanager
async def versioned_worker(
    client: Client, queue: str, deployment: str, build_id: str, world: FakeWorld
) -> AsyncIterator[None]:
    settings = WorkerSettings(
        TENANTFLOW_TASK_QUEUE=queue, TENANTFLOW_DEPLOYMENT_NAME=deployment, TENANTFLOW_BUILD_ID=build_id
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_worker(
            settings,
            stop,
            client,
            workflows=[TenantOnboarding, TenantOffboarding, TenantHold],
            activities=world.activities(),
        )
    )
    try:
        yield
    finally:
        stop.set()
        await task


async def set_current(client: Client, deployment: str, build_id: str) -> None:
    """Make ``build_id`` the deployment's current version, once its worker has polled (the server knows it)."""
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=deployment, build_id=build_id, identity="tenantflow-test"
    )
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            return
        except RPCError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def task_versions(handle: WorkflowHandle[Any, Any]) -> set[tuple[str, int]]:
    """(build id, versioning behaviour) of every workflow task the run's history shows completed."""
    seen = set()
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            done = event.workflow_task_completed_event_attributes
            seen.add((done.deployment_version.build_id, done.versioning_behavior))
    return seen


async def test_a_run_started_on_version_a_finishes_on_a_while_b_takes_new_runs(dev_env: WorkflowEnvironment) -> None:
    client = dev_env.client
    queue, deployment = f"versioned-{uuid.uuid4().hex[:8]}", f"tenantflow-{uuid.uuid4().hex[:6]}"
    api = as_tester(client, queue)
    world_a, world_b = FakeWorld(), FakeWorld()
    async with versioned_worker(client, queue, deployment, "build-a", world_a):
        await set_current(client, deployment, "build-a")
        old = await api.start_onboarding(example_tenant(f"tenant-v{uuid.uuid4().hex[:6]}"))
        old_plan = await wait_for_stage(api, old, "gate:approve_plan")
        async with versioned_worker(client, queue, deployment, "build-b", world_b):
            await set_current(client, deployment, "build-b")
            new = await api.start_onboarding(example_tenant(f"tenant-v{uuid.uuid4().hex[:6]}"))
            new_plan = await wait_for_stage(api, new, "gate:approve_plan")
            assert old_plan.plan_hash and new_plan.plan_hash
            await reviewer(api).approve(old.id, old_plan.plan_hash)
            await reviewer(api).approve(new.id, new_plan.plan_hash)
            old_result: OnboardingResult = await old.result()
            new_result: OnboardingResult = await new.result()
    assert old_result.status == new_result.status == "completed"
    pinned = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
    assert await task_versions(old) == {("build-a", pinned)}
    assert await task_versions(new) == {("build-b", pinned)}
    assert [r.contract.slug for r in world_a.records] == [old_result.slug], "A ran the old run's activities"
    assert [r.contract.slug for r in world_b.records] == [new_result.slug], "B ran the new run's activities"
    assert "kube.namespace" in world_a.calls and "kube.namespace" in world_b.calls


def test_a_deployment_name_without_a_build_id_is_refused() -> None:
    with pytest.raises(ValidationError, match="TENANTFLOW_BUILD_ID"):
        WorkerSettings(TENANTFLOW_DEPLOYMENT_NAME="tenantflow")
    assert deployment_config(WorkerSettings()) is None
