"""The worker's activity log lines carry run, tenant, layer and step; ``/metrics`` has step and SDK metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterator

import httpx
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.devserver import free_port
from tenantflow.worker import logs
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.approvers import as_tester, reviewer
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Puts the root logger's handlers back after the test, so no later test writes through a handler bound
    to this test's captured (then closed) stderr."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
async def test_log_context_and_metrics_after_a_run(
    dev_env: WorkflowEnvironment, capfd: pytest.CaptureFixture[str]
) -> None:
    logs.configure("json", "INFO")
    port = free_port()
    settings = WorkerSettings(
        TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host,
        TENANTFLOW_TASK_QUEUE=f"obs-{uuid.uuid4().hex[:8]}",
        TENANTFLOW_METRICS_PORT=port,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_worker(
            settings,
            stop,
            workflows=[TenantOnboarding, TenantHold],
            activities=FakeWorld(fail_at="kube.quota").activities(),
        )
    )
    try:
        api = as_tester(dev_env.client, settings.task_queue)
        slug = unique_slug()
        handle = await api.start_onboarding(example_tenant(slug))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await reviewer(api).approve(handle.id, status.plan_hash)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    finally:
        stop.set()
        await task

    assert 'tenantflow_step_duration_seconds_count{layer="kube",outcome="ok",step="namespace"}' in metrics
    assert 'tenantflow_step_failures_total{error="Invalid",layer="kube",step="quota"}' in metrics
    assert "temporal_activity_execution_latency" in metrics

    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("tenant") == slug]
    failed = [line for line in mine if line["event"] == "activity attempt failed"]
    assert failed and failed[0]["layer"] == "kube" and failed[0]["step"] == "quota"
    assert failed[0]["workflow_id"] == handle.id and failed[0]["run_id"]
    finished = {line["step"] for line in mine if line["event"] == "activity attempt finished"}
    assert {"preflight", "plan", "namespace"} <= finished
