"""``tenantflow setup`` on a fresh Temporal server started without tenantflow's search attributes (issue 27): it
creates ``TenantSlug``, ``WorkerCluster`` and ``Stage``, a second run changes nothing, and an onboarding then
starts and reaches its plan gate. Before it, the start is refused (the attributes are unknown)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.devserver import binary, free_port, port_open
from tests.starter.conftest import CLI, cli_env
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


@pytest.fixture
def bare_server(tmp_path: Path) -> Iterator[str]:
    """``temporal server start-dev`` with no ``--search-attribute``: a namespace as a real deployment starts."""
    port = free_port()
    argv = [binary("temporal"), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port)]
    argv += ["--db-filename", str(tmp_path / "bare.db"), "--log-level", "warn"]
    with (tmp_path / "bare.log").open("wb") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            if port_open("127.0.0.1", port):
                break
            assert server.poll() is None, (tmp_path / "bare.log").read_text()
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest_asyncio.fixture
async def bare_env(bare_server: str) -> AsyncIterator[WorkflowEnvironment]:
    client = await Client.connect(bare_server)
    yield WorkflowEnvironment.from_client(client)


async def setup(env: WorkflowEnvironment) -> tuple[int, str, str]:
    async with fake_worker(env, FakeWorld()) as api:
        proc = await asyncio.create_subprocess_exec(
            CLI, "setup", env=cli_env(api), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_setup_creates_the_search_attributes_and_onboarding_then_starts(bare_env: WorkflowEnvironment) -> None:
    async with fake_worker(bare_env, FakeWorld()) as api:
        with pytest.raises(RPCError, match="no mapping defined for search attribute"):
            await api.start_onboarding(example_tenant(f"tenant-s{uuid.uuid4().hex[:6]}"))

    code, out, err = await setup(bare_env)
    assert code == 0, err
    assert "created search attributes TenantSlug, WorkerCluster, Stage" in out, out
    code, out, err = await setup(bare_env)
    assert code == 0 and "nothing to do" in out, (out, err)

    async with fake_worker(bare_env, FakeWorld()) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-s{uuid.uuid4().hex[:6]}"))
        status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=60)
        assert status.plan_hash
        await handle.cancel()
