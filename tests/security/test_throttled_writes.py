"""A throttled write (429 with Retry-After: the server refused it before doing anything) is tried again in place,
by the HTTP clients of Authentik and Weka and by the Kubernetes client's pool; a write failing any other way is
tried once, its outcome left to the activity (which reads before it writes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest_asyncio
import urllib3
from aiohttp import web
from aiohttp.test_utils import TestServer

from tenantflow.activities.common import httpretry

Hits = list[str]


@pytest_asyncio.fixture
async def server() -> AsyncIterator[tuple[str, Hits]]:
    """``/throttled`` answers 429 (Retry-After: 0) twice, then 201; ``/failing`` answers 503. Any method."""
    hits: Hits = []

    async def throttled(request: web.Request) -> web.Response:
        hits.append(f"{request.method} {request.path}")
        if len(hits) <= 2:
            return web.Response(status=429, headers={"Retry-After": "0"}, text="slow down")
        return web.Response(status=201, text="made")

    async def failing(request: web.Request) -> web.Response:
        hits.append(f"{request.method} {request.path}")
        return web.Response(status=503, text="unavailable")

    app = web.Application()
    app.add_routes([web.route("*", "/throttled", throttled), web.route("*", "/failing", failing)])
    async with TestServer(app) as test_server:
        yield str(test_server.make_url("")).rstrip("/"), hits


async def test_a_throttled_write_is_sent_again_by_the_http_clients(server: tuple[str, Hits]) -> None:
    url, hits = server
    with httpx.Client(base_url=url, timeout=2.0) as http:
        response = await asyncio.to_thread(httpretry.send, http, "POST", "/throttled", json={})
    assert response.status_code == 201 and hits == ["POST /throttled"] * 3


async def test_a_failed_write_is_sent_once_by_the_http_clients(server: tuple[str, Hits]) -> None:
    url, hits = server
    with httpx.Client(base_url=url, timeout=2.0) as http:
        response = await asyncio.to_thread(httpretry.send, http, "PATCH", "/failing", json={})
    assert response.status_code == 503 and hits == ["PATCH /failing"]


def kube_pool_request(url: str, method: str, path: str) -> int:
    pool = urllib3.PoolManager(retries=httpretry.kube_retries())
    return pool.request(method, f"{url}{path}", body=b"{}").status


async def test_the_kubernetes_pool_sends_a_throttled_write_again_and_a_failed_one_once(
    server: tuple[str, Hits],
) -> None:
    url, hits = server
    assert await asyncio.to_thread(kube_pool_request, url, "POST", "/throttled") == 201
    assert hits == ["POST /throttled"] * 3
    hits.clear()
    assert await asyncio.to_thread(kube_pool_request, url, "POST", "/failing") == 503
    assert hits == ["POST /failing"]
    hits.clear()
    assert await asyncio.to_thread(kube_pool_request, url, "GET", "/failing") == 503
    assert hits == ["GET /failing"] * httpretry.READ_ATTEMPTS
