"""The worker's /livez and /readyz against a real worker on the dev server, over real sockets."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.starter.devserver import free_port
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.health import HealthSettings, Probe, serve_health
from tenantflow.worker.run import run_worker
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.workflows.fakes import FakeWorld


async def probe(port: int, path: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.get(f"http://127.0.0.1:{port}{path}")


async def until_ready(port: int) -> httpx.Response:
    """Ask /readyz until it answers 200 (the worker takes a moment to validate its namespace and poll)."""
    while True:
        try:
            response = await probe(port, "/readyz")
        except httpx.ConnectError:
            response = None
        if response is not None and response.status_code == 200:
            return response
        await asyncio.sleep(0.1)


@pytest.fixture
def health_port(monkeypatch: pytest.MonkeyPatch) -> int:
    port = free_port()
    monkeypatch.setenv("TENANTFLOW_HEALTH_PORT", str(port))
    monkeypatch.setenv("TENANTFLOW_HEALTH_HOST", "127.0.0.1")
    return port


@pytest.fixture
async def unstarted(dev_env: WorkflowEnvironment) -> AsyncIterator[tuple[Worker, asyncio.Event]]:
    worker = Worker(
        dev_env.client,
        task_queue=f"health-{uuid.uuid4().hex[:8]}",
        workflows=[TenantOnboarding, TenantHold],
        activities=FakeWorld().activities(),
    )
    yield worker, asyncio.Event()


async def test_a_running_worker_is_live_and_ready_then_gone_after_stop(
    dev_env: WorkflowEnvironment, health_port: int
) -> None:
    settings = WorkerSettings(
        TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
        TENANTFLOW_TASK_QUEUE=f"health-{uuid.uuid4().hex[:8]}",
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_worker(settings, stop, workflows=[TenantOnboarding, TenantHold], activities=FakeWorld().activities())
    )
    try:
        ready = await asyncio.wait_for(until_ready(health_port), timeout=60)
        assert f"polling task queue {settings.task_queue}" in ready.text
        live = await probe(health_port, "/livez")
        assert live.status_code == 200
    finally:
        stop.set()
        await task
    with pytest.raises(httpx.ConnectError):
        await probe(health_port, "/livez")


async def test_not_ready_before_the_worker_runs(
    unstarted: tuple[Worker, asyncio.Event], health_port: int, dev_env: WorkflowEnvironment
) -> None:
    worker, stop = unstarted
    async with serve_health(HealthSettings(), Probe(dev_env.client, worker, stop)):
        ready = await probe(health_port, "/readyz")
        assert (ready.status_code, ready.text) == (503, "the Temporal worker is not running\n")
        assert (await probe(health_port, "/livez")).status_code == 200


async def test_not_ready_while_draining(
    unstarted: tuple[Worker, asyncio.Event], health_port: int, dev_env: WorkflowEnvironment
) -> None:
    worker, stop = unstarted
    async with serve_health(HealthSettings(), Probe(dev_env.client, worker, stop)), worker:
        await asyncio.wait_for(until_ready(health_port), timeout=60)
        stop.set()
        ready = await probe(health_port, "/readyz")
        assert (ready.status_code, ready.text) == (503, "stopping: draining in-flight tasks\n")
        assert (await probe(health_port, "/livez")).status_code == 200
