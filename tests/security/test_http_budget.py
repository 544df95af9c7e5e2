"""Bounded I/O on the HTTP clients: in-place retries of a read stop before one call could outlast the heartbeat
timeout, and a read that keeps failing fast is still retried in place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from tenantflow.activities.common import httpretry


@pytest_asyncio.fixture
async def server() -> AsyncIterator[tuple[str, list[str]]]:
    """``/hang`` never answers in time; ``/busy`` answers 503 twice, then 200. Yields the URL and the hits."""
    hits: list[str] = []

    async def hang(request: web.Request) -> web.Response:
        hits.append(request.path)
        await asyncio.sleep(30)
        return web.Response(text="late")

    async def busy(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(status=503 if len(hits) <= 2 else 200, text="busy")

    app = web.Application()
    app.add_routes([web.get("/hang", hang), web.get("/busy", busy)])
    async with TestServer(app) as test_server:
        yield str(test_server.make_url("")), hits


async def test_a_hung_read_is_not_retried_past_the_budget(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, hits = server
    monkeypatch.setattr(httpretry, "IN_PLACE_BUDGET_S", 3.0)
    with httpx.Client(base_url=url, timeout=1.0) as http, pytest.raises(httpx.ReadTimeout):
        await asyncio.to_thread(httpretry.send, http, "GET", "/hang")
    assert hits == ["/hang"], "a second try could have ended after the budget"


async def test_fast_transient_failures_are_still_retried_in_place(server: tuple[str, list[str]]) -> None:
    url, hits = server
    with httpx.Client(base_url=url, timeout=1.0) as http:
        response = await asyncio.to_thread(httpretry.send, http, "GET", "/busy")
    assert response.status_code == 200 and hits == ["/busy"] * 3
