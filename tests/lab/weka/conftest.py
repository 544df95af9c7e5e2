"""Fixtures: the Weka stand-in on a real socket with a controllable clock, and a logged-in httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web
from weka_harness import PASSWORD, USERNAME, FakeClock, WekaLab

from tenantflow.lab.weka.app import TiB, build_app


@pytest.fixture
async def weka() -> AsyncIterator[WekaLab]:
    clock = FakeClock()
    app = build_app(
        USERNAME,
        PASSWORD,
        total_bytes=1000 * TiB,
        filesystems={"home": 100 * TiB, "scratch": 500 * TiB},
        directories={"home": ["/alice"]},
        clock=clock,
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    api = httpx.AsyncClient(base_url=url + "/api/v2")
    try:
        yield WekaLab(url=url, api=api, clock=clock)
    finally:
        await api.aclose()
        await runner.cleanup()


@pytest.fixture
async def admin(weka: WekaLab) -> AsyncIterator[httpx.AsyncClient]:
    tokens = await weka.login()
    async with weka.client(tokens["access_token"]) as client:
        yield client
