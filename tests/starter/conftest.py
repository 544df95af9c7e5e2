"""CLI test helpers: a fake-activity worker on the dev server, the CLI run as a real subprocess, and the HTTP API
served on a real loopback port."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio
from aiohttp import web
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.http_api import make_api_app
from tenantflow.worker.signatures import APPROVAL_KEY_ENV
from tenantflow.worker.tokens import TokenSource
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker

CLI = str(Path(sys.executable).parent / "tenantflow")


def cli_env(api: TenantflowClient) -> dict[str, str]:
    """The environment that points the ``tenantflow`` CLI at this dev server and task queue, signing with the key
    ``api`` signs with (if any): the runs the CLI starts carry a start proof as ``api``'s would."""
    target = api.client.service_client.config.target_host
    key = {APPROVAL_KEY_ENV: str(api.signer.path)} if api.signer is not None else {}
    return {**os.environ, "TEMPORAL_ADDRESS": target, "TENANTFLOW_TASK_QUEUE": api.task_queue, **key}


def only_temporal_env(api: TenantflowClient) -> dict[str, str]:
    """A shell with the Temporal settings of ``api`` and nothing of any service: no env file, no credentials."""
    target = api.client.service_client.config.target_host
    return {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/"),
        "TEMPORAL_ADDRESS": target,
        "TENANTFLOW_TASK_QUEUE": api.task_queue,
    }


async def tenantflow(api: TenantflowClient, *args: str) -> tuple[int, str, str]:
    """Run the CLI as a subprocess (it talks to the dev server over the network)."""
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, env=cli_env(api), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def tenantflow_json(api: TenantflowClient, *args: str) -> Any:
    code, out, err = await tenantflow(api, *args, "--output", "json")
    assert code == 0, err
    return json.loads(out)


def unique_slug() -> str:
    return f"tenant-c{uuid.uuid4().hex[:6]}"


@pytest_asyncio.fixture
async def fake_api(dev_env: WorkflowEnvironment) -> AsyncIterator[TenantflowClient]:
    async with fake_worker(dev_env, FakeWorld()) as api:
        yield api


@asynccontextmanager
async def http_api(api: TenantflowClient, tokens: TokenSource) -> AsyncIterator[httpx.AsyncClient]:
    """``tenantflow serve-api``'s app, acting through ``api`` for the callers of ``tokens``, on a free loopback
    port; a client of it."""
    runner = web.AppRunner(make_api_app(api, tokens))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}", timeout=30) as http:
            yield http
    finally:
        await runner.cleanup()
