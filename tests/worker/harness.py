"""Deploy-test helpers: the temporal CLI's variables set exactly, and one onboarding by the real worker entry point."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.approvers import key_of_tester, reviewer
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage

TEMPORAL_VARIABLES = (
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "TEMPORAL_API_KEY",
    "TEMPORAL_TLS",
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    "TEMPORAL_TLS_SERVER_NAME",
    "TEMPORAL_PROFILE",
    "TEMPORAL_CONFIG_FILE",
)


def configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variables: dict[str, str]) -> None:
    """Exactly ``variables`` among the temporal CLI's; no config file (a developer's own stays out)."""
    for name in TEMPORAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


@dataclass(frozen=True)
class Run:
    workflow_id: str
    task_queue: str
    address: str
    """Where the API client connected."""
    result: OnboardingResult


async def onboard_with_worker(slug: str) -> Run:
    """Start the worker on a fresh task queue, onboard ``slug`` through its plan gate, stop the worker."""
    settings = WorkerSettings(
        TENANTFLOW_TASK_QUEUE=f"deploy-{uuid.uuid4().hex[:8]}", TENANTFLOW_APPROVAL_KEY=key_of_tester()
    )
    stop = asyncio.Event()
    worker = asyncio.create_task(
        run_worker(
            settings,
            stop,
            workflows=[TenantOnboarding, TenantOffboarding, TenantHold],
            activities=FakeWorld().activities(),
        )
    )
    try:
        api = await TenantflowClient.connect(settings)
        handle = await api.start_onboarding(example_tenant(slug))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await reviewer(api).approve(handle.id, status.plan_hash)
        result = await handle.result()
    finally:
        stop.set()
        await worker
    return Run(handle.id, settings.task_queue, api.client.service_client.config.target_host, result)
