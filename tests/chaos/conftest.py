"""Chaos fixtures: a lab of their own, one restartable Temporal dev server (SQLite file) and the summary table.

Every test here is marked ``chaos``; the table of scenarios, crashes, faults and
lost/duplicated objects is printed at the end of the pytest run (by the root conftest, which the pytest-xdist
controller loads).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.devserver import DevServer, free_port
from tests.approvers import reviewer
from tests.chaos.kit import STATS, WorkerProcess, settings, world
from tests.integration.runs import offboard
from tests.labfixture import whole_lab
from tests.workflows.contract import EXAMPLES

HEARTBEAT_BOUND = "heartbeat_bound"
EXEC_TIMEOUT = "exec_timeout"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{HEARTBEAT_BOUND}(seconds): the rig's worker lowers every step's heartbeat timeout to that bound "
        "(TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S), so a test that kills it mid-step waits that long, not the minute",
    )
    config.addinivalue_line(
        "markers",
        f"{EXEC_TIMEOUT}(seconds): the rig's worker gives up on a pod exec after that long (TENANTFLOW_EXEC_TIMEOUT), "
        "so a test can make a command outlast it",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.chaos)


@pytest.fixture(scope="session")
def chaos_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """A lab of the chaos suite's own: its baseline keeps tenant-foo onboarded for the whole session (offboarded
    at the end), which the integration tests sharing the session ``lab`` must not see."""
    yield from whole_lab(tmp_path_factory, "chaoslab")


@pytest.fixture(scope="session")
def chaos_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server with its SQLite file in tmp, so a test can stop and restart it with every run intact."""
    server = DevServer(state_dir=Path(tmp_path_factory.mktemp("chaos-temporal")), port=free_port())
    server.start(headless=True)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Rig:
    """A worker process on a private queue and a client for it."""

    api: TenantflowClient
    worker: WorkerProcess
    log: Path


@pytest_asyncio.fixture
async def rig(
    chaos_server: DevServer, chaos_lab: LabEndpoints, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Rig]:
    queue = f"chaos-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    env = {
        variable: str(marker.args[0])
        for name, variable in (
            (HEARTBEAT_BOUND, "TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S"),
            (EXEC_TIMEOUT, "TENANTFLOW_EXEC_TIMEOUT"),
        )
        if (marker := request.node.get_closest_marker(name)) is not None
    }
    worker = WorkerProcess(chaos_server.address, queue, chaos_lab, log, **env)
    worker.start()
    try:
        yield Rig(await TenantflowClient.connect(settings(chaos_server.address, queue)), worker, log)
    finally:
        worker.stop()


def tenant(lab: LabEndpoints, slug: str = "tenant-foo", **updates: Any) -> TenantContract:
    contract = load_tenant(EXAMPLES / "tenant-foo.yaml")
    return contract.model_copy(update={"slug": slug, **updates})


def small_tenant(
    lab: LabEndpoints, slug: str, usernames: tuple[str, str], nodes: list[str] | None = None
) -> TenantContract:
    """A two-node, two-user tenant with names of its own (users, team account, no login hostname)."""
    foo = tenant(lab)
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@{slug}.example"})
        for u, name in zip(foo.users, usernames, strict=False)
    ]
    return foo.model_copy(
        update={
            "slug": slug,
            "display_name": slug.title(),
            "users": users,
            "capacity": foo.capacity.model_copy(update={"gpus": 16, "nodes": nodes}),
            "slurm": foo.slurm.model_copy(update={"team_account": f"ml-team-{slug.removeprefix('tenant-')}"}),
            "login": foo.login.model_copy(update={"hostname": None}),
        }
    )


async def approve_and_wait(api: TenantflowClient, workflow_id: str) -> tuple[str, str]:
    """Approve the published plan and wait for the end: (``completed``/``failed``, message)."""
    status = await api.wait_for_plan(workflow_id)
    assert status.plan_hash, status
    await reviewer(api).approve(workflow_id, status.plan_hash)
    return await outcome(api, workflow_id)


async def outcome(api: TenantflowClient, workflow_id: str) -> tuple[str, str]:
    try:
        result: OnboardingResult = await api.result(workflow_id)
    except WorkflowFailureError as exc:
        cause: Any = exc.cause
        while getattr(cause, "cause", None) is not None:
            cause = getattr(cause, "cause", None)
        return "failed", str(getattr(cause, "message", cause))
    return result.status, result.message


@dataclass
class Baseline:
    """The undisturbed onboarding of tenant-foo: how it ended and the world it left."""

    before: dict[str, Any]
    end: tuple[str, str]
    after: dict[str, Any]


@pytest_asyncio.fixture(scope="session")
async def baseline(
    chaos_server: DevServer, chaos_lab: LabEndpoints, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Baseline]:
    queue = f"chaos-base-{uuid.uuid4().hex[:8]}"
    worker = WorkerProcess(
        chaos_server.address, queue, chaos_lab, Path(tmp_path_factory.mktemp("baseline")) / "worker.log"
    )
    worker.start()
    try:
        api = await TenantflowClient.connect(settings(chaos_server.address, queue))
        before = world(chaos_lab)
        handle = await api.start_onboarding(tenant(chaos_lab))
        end = await approve_and_wait(api, handle.id)
        after = world(chaos_lab)
        with contextlib.suppress(Exception):
            await api.client.get_workflow_handle(handle.id).terminate()
    finally:
        worker.stop()
    STATS.notes.append(f"undisturbed onboarding of tenant-foo ended {end[0]}: {end[1][:120]}")
    yield Baseline(before, end, after)
    worker.start()
    try:
        gone = await offboard(api, tenant(chaos_lab), purge=True)
    finally:
        worker.stop()
    assert gone.status == "completed", gone.message
