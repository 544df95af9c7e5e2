"""Session-wide fixtures: the Temporal dev server, the time-skipping test server and the whole lab."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tests.approvers import SessionApprovers, session_approvers
from tests.labfixture import whole_lab
from tests.temporal_env import start_dev_server, start_time_skipping


@pytest.fixture(scope="session", autouse=True)
def approvers() -> SessionApprovers:
    """The session's principals and keys, their settings exported before any worker starts (tests/approvers.py)."""
    return session_approvers()


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server()
    yield env
    await env.shutdown()


@pytest_asyncio.fixture
async def ts_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping()
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """One whole lab (``lab up``) for the session; tests leave it as they found it."""
    yield from whole_lab(tmp_path_factory, "lab")
