"""Fixtures of the browser tests: a Temporal dev server with its UI (the one ``tenantflow dev-server`` runs) and
Debian's chromium driven by playwright (no browser download)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright
from temporalio.client import Client

from tenantflow.starter.devserver import DevServer, free_port
from tenantflow.worker.codec import PLAIN

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / ".state" / "test-artifacts" / "ui"
"""Where a failing browser test leaves its screenshot, page HTML and playwright trace."""


@pytest.fixture(scope="session")
def temporal_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server with its web UI, each on a free port, stopped by PID afterwards."""
    server = DevServer(state_dir=tmp_path_factory.mktemp("temporal-ui"), port=free_port(), ui_port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture(scope="session")
async def ui_client(temporal_ui: DevServer) -> Client:
    return await Client.connect(temporal_ui.address, namespace=temporal_ui.namespace, data_converter=PLAIN)


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-system-packages.sh (Debian package chromium)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
