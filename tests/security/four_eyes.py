"""A fake-activity worker with the four-eyes rule on for onboarding and offboarding, and clients with chosen
identities."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.approvals import FourEyes
from tenantflow.worker.codec import PLAIN
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tests.workflows.fakes import FakeWorld


async def client_as(env: WorkflowEnvironment, identity: str, task_queue: str) -> TenantflowClient:
    """A tenantflow client on ``env`` that presents ``identity`` to Temporal."""
    config = env.client.service_client.config
    client = await Client.connect(
        config.target_host, namespace=env.client.namespace, identity=identity, data_converter=PLAIN
    )
    return TenantflowClient(client, task_queue)


@asynccontextmanager
async def four_eyes_worker(env: WorkflowEnvironment, world: FakeWorld | None = None) -> AsyncIterator[str]:
    """Yield the task queue of a worker refusing approvals of onboardings and offboardings by their starter."""
    queue = f"four-eyes-{uuid.uuid4().hex[:8]}"
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[TenantOnboarding, TenantOffboarding],
        activities=(world or FakeWorld()).activities(),
        interceptors=[FourEyes({"TenantOnboarding", "TenantOffboarding"})],
    ):
        yield queue
