"""The whole lab and a real worker for integration tests: started once per session, stopped by PID."""

from __future__ import annotations

import asyncio
import os
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs

import httpx
import pytest
from temporalio.client import Client

from tenantflow.activities.common.settings import settings as service_settings
from tenantflow.activities.smoke.steps import smoke_settings
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.httpbase import COMMITTED
from tenantflow.lab.supervisor import down, up
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tests.approvers import as_tester

SESSION_PATHS = ("/login", "/login/refresh")
"""Weka logins create a session, not state: they are not writes to the world."""


def authentik_api(lab: LabEndpoints) -> httpx.Client:
    """An admin client of the lab's Authentik API (``/api/v3``), as a person making accounts by hand."""
    return httpx.Client(
        base_url=f"{lab.authentik_url}/api/v3",
        headers={"Authorization": f"Bearer {lab.authentik_token}"},
        verify=False,
        timeout=10,
    )


def lab_services(lab: LabEndpoints) -> dict[str, str]:
    """Base URL of every HTTP stand-in, by name."""
    urls = {f"kube-{context}": url for context, url in lab.kube_urls.items()}
    return urls | {"authentik": lab.authentik_url, "weka": lab.weka_url}


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, verify=False, timeout=10)


def journal_writes(lab: LabEndpoints) -> dict[str, int]:
    """Successful writes each stand-in has seen since the last reset (a write whose answer a fault lost too)."""
    counts: dict[str, int] = {}
    for name, url in lab_services(lab).items():
        with _client(url) as http:
            entries = http.get("/_lab/requests").json()["requests"]
        counts[name] = sum(
            1
            for e in entries
            if e["method"] in {"POST", "PUT", "PATCH", "DELETE"}
            and e["injected"] in COMMITTED
            and 200 <= e["status"] < 300
            and not e["path"].endswith(SESSION_PATHS)
        )
    return counts


def exec_commands(lab: LabEndpoints, context: str = "tenant-cluster") -> list[list[str]]:
    """The argv of every pod exec the apiserver of ``context`` served since the last reset, from its journal (the
    exec request carries each argument as a ``command`` query parameter)."""
    with _client(lab.kube_urls[context]) as http:
        entries = http.get("/_lab/requests").json()["requests"]
    return [parse_qs(e["query"]).get("command", []) for e in entries if e["path"].endswith("/exec")]


def reset_journals(lab: LabEndpoints) -> None:
    for url in lab_services(lab).values():
        with _client(url) as http:
            http.delete("/_lab/requests")


def snapshot(lab: LabEndpoints) -> dict[str, Any]:
    """The state of every HTTP stand-in."""
    result: dict[str, Any] = {}
    for name, url in lab_services(lab).items():
        with _client(url) as http:
            result[name] = http.get("/_lab/snapshot").json()
    return result


def _clear_settings() -> None:
    service_settings.cache_clear()
    smoke_settings.cache_clear()


@contextmanager
def exported(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment (activity settings re-read) until the block ends, then the
    environment as it was."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    _clear_settings()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _clear_settings()


def lab_env(lab: LabEndpoints) -> AbstractContextManager[None]:
    """This process's activities pointed at ``lab`` (its ``lab.env`` variables exported) for one block. Never
    left behind: a later process started with ``os.environ`` (a chaos worker, ``tenantflow bench``) would
    otherwise talk to this lab, since a worker's ``TENANTFLOW_ENV_FILE`` does not override the environment."""
    return exported(lab.to_env())


LEFTOVER_STOP_S = 30.0
_running: dict[str, AbstractAsyncContextManager[None]] = {}
"""The lab workers whose block has not ended, by task queue: a test stopped by pytest-timeout leaves its block
suspended, its worker running and its lab's environment exported (the next test's activities would reach that lab)."""


async def _stop_leftovers() -> None:
    """Stop the workers of blocks a timed-out test left behind and restore the environment they exported."""
    while _running:
        queue, stopping = _running.popitem()
        try:
            await asyncio.wait_for(stopping.__aexit__(None, None, None), LEFTOVER_STOP_S)
        except TimeoutError:
            warnings.warn(
                f"the worker of {queue}, left by an earlier test, did not stop in {LEFTOVER_STOP_S} s", stacklevel=2
            )


@asynccontextmanager
async def _worker_in(lab: LabEndpoints, settings: WorkerSettings, client: Client) -> AsyncIterator[None]:
    stop = asyncio.Event()
    with lab_env(lab):
        task = asyncio.create_task(run_worker(settings, stop, client=client))
        try:
            yield
        finally:
            stop.set()
            await task


@asynccontextmanager
async def lab_worker(client: Client, lab: LabEndpoints, **overrides: str) -> AsyncIterator[TenantflowClient]:
    """A real worker (every workflow and activity) on a private task queue, pointed at the lab, with the shipped
    settings (four-eyes and verified approvers on: tests/approvers.py) but for ``overrides``; its client starts runs
    as the tester, signing them (a start proof), so that the reviewer may approve them. Workers an earlier,
    timed-out test left running are stopped first."""
    await _stop_leftovers()
    queue = f"it-{uuid.uuid4().hex[:8]}"
    settings = WorkerSettings(TENANTFLOW_TASK_QUEUE=queue, TENANTFLOW_MAX_ACTIVITIES=16, **overrides)
    running = _worker_in(lab, settings, client)
    await running.__aenter__()
    _running[queue] = running
    try:
        yield as_tester(client, queue)
    finally:
        if _running.pop(queue, None) is not None:
            await running.__aexit__(None, None, None)


def lab_dir(base: Path) -> Path:
    return base / "lab"


def whole_lab(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    authentik_version: str | None = None,
    slurm_operator: Literal["configmap", "slinky"] | None = None,
) -> Iterator[LabEndpoints]:
    """A whole lab (``lab up``) in a fresh numbered folder, stopped by PID afterwards; skips without root.
    ``authentik_version``: the Authentik release the lab plays (default current); ``slurm_operator``: the Slurm
    operator it plays (default configmap)."""
    if os.geteuid() != 0:
        pytest.skip("the lab's real slapd and Slurm need root")
    state = Path(tmp_path_factory.mktemp(name, numbered=True))
    try:
        yield up(state, authentik_version=authentik_version, slurm_operator=slurm_operator)
    finally:
        down(state)
