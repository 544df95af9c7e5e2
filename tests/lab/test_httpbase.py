"""The lab's shared HTTP plumbing: per-route faults switchable at run time, the request journal, snapshots."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from tenantflow.lab.httpbase import make_app

State = dict[str, int]


@pytest_asyncio.fixture
async def server() -> AsyncIterator[str]:
    state: State = {"items": 0}

    async def create(_: web.Request) -> web.Response:
        state["items"] += 1
        return web.json_response({"items": state["items"]}, status=201)

    async def read(_: web.Request) -> web.Response:
        return web.json_response(state)

    app = make_app("demo", snapshot=lambda: dict(state))
    app.add_routes([web.post("/items", create), web.get("/items", read)])
    async with TestServer(app) as test_server:
        yield str(test_server.make_url(""))


async def journaled(http: httpx.AsyncClient) -> tuple[int, dict[str, int], list[tuple[str, int, str | None]]]:
    """The journal's committed writes, injected faults by kind, and (method, status, injected) of each request."""
    journal = (await http.get("/_lab/requests")).json()
    return (
        journal["writes"],
        journal["injected"],
        [(e["method"], e["status"], e["injected"]) for e in journal["requests"]],
    )


async def test_faults_are_per_route_switchable_and_journaled(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        rules = {
            "seed": 1,
            "rules": [
                {"path": "^/items$", "methods": ["POST"], "error_rate": 1.0, "error_status": 429, "retry_after_s": 7}
            ],
        }
        assert (await http.put("/_lab/faults", json=rules)).status_code == 200
        refused = await http.post("/items")
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "7"
        assert (await http.get("/items")).json() == {"items": 0}
        await http.delete("/_lab/faults")
        assert (await http.post("/items")).status_code == 201
        journal = (await http.get("/_lab/requests")).json()
        assert journal["writes"] == 1
        assert journal["injected"] == {"429": 1}
        assert [(e["method"], e["status"], e["injected"]) for e in journal["requests"]] == [
            ("POST", 429, "error"),
            ("GET", 200, None),
            ("POST", 201, None),
        ]
        assert (await http.get("/_lab/snapshot")).json() == {"items": 1}
        await http.delete("/_lab/requests")
        assert (await http.get("/_lab/requests")).json()["requests"] == []


async def test_latency_and_dropped_connections(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        await http.put("/_lab/faults", json={"rules": [{"path": "^/items$", "methods": ["GET"], "latency_ms": 300}]})
        started = time.monotonic()
        assert (await http.get("/items")).status_code == 200
        assert time.monotonic() - started >= 0.3
        await http.put("/_lab/faults", json={"rules": [{"path": "^/items$", "drop_rate": 1.0}]})
        with pytest.raises(httpx.TransportError):
            await http.post("/items")
        assert (await http.put("/_lab/faults", json={"rules": [{"error_rate": 2}]})).status_code == 422


async def test_a_lost_response_commits_the_write_and_drops_the_answer(server: str) -> None:
    """``drop_after_rate``: the handler runs (the item exists afterwards), the client sees the connection close."""
    async with httpx.AsyncClient(base_url=server) as http:
        rule = {"path": "^/items$", "methods": ["POST"], "drop_after_rate": 1.0}
        await http.put("/_lab/faults", json={"seed": 3, "rules": [rule]})
        with pytest.raises(httpx.RemoteProtocolError):
            await http.post("/items")
        assert (await http.get("/items")).json() == {"items": 1}
        assert await journaled(http) == (1, {"lost_response": 1}, [("POST", 201, "lost_response"), ("GET", 200, None)])
        await http.put("/_lab/faults", json={"seed": 3, "rules": [{**rule, "drop_after_rate": 0.5}]})
        answered = 0
        for _ in range(8):
            with contextlib.suppress(httpx.TransportError):
                answered += (await http.post("/items")).status_code == 201
        assert 0 < answered < 8
        assert (await http.get("/items")).json() == {"items": 9}, "every write ran, answered or not"


async def test_a_request_whose_client_gave_up_during_the_latency_is_never_served(server: str) -> None:
    """A hung connection the client abandons (its timeout below the latency) never reaches the handler."""
    async with httpx.AsyncClient(base_url=server) as http:
        await http.put(
            "/_lab/faults", json={"rules": [{"path": "^/items$", "methods": ["POST"], "latency_ms": 90_000}]}
        )
        with pytest.raises(httpx.TimeoutException):
            await http.post("/items", timeout=0.3)
        deadline = time.monotonic() + 10
        while not (journal := (await http.get("/_lab/requests")).json())["requests"]:
            assert time.monotonic() < deadline, "the abandoned request is still waiting"
            await asyncio.sleep(0.05)
        assert [(e["method"], e["status"], e["injected"]) for e in journal["requests"]] == [("POST", 0, "abandoned")]
        assert journal["injected"] == {"latency": 1, "abandoned": 1} and journal["writes"] == 0
        assert (await http.get("/items")).json() == {"items": 0}


async def test_a_rule_matches_the_query_and_is_spent_after_max_fires(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        rule = {"path": "^/items$", "query": "command=add", "drop_after_rate": 1.0, "max_fires": 2}
        await http.put("/_lab/faults", json={"rules": [rule, {"path": "^/items$", "error_rate": 1.0}]})
        assert (await http.post("/items", params={"command": "show"})).status_code == 503
        for _ in range(2):
            with pytest.raises(httpx.TransportError):
                await http.post("/items", params={"command": "add"})
        assert (await http.post("/items", params={"command": "add"})).status_code == 503, "spent: the next rule"
        journal = (await http.get("/_lab/requests")).json()
        assert [e["injected"] for e in journal["requests"]] == ["error", "lost_response", "lost_response", "error"]
        assert (await http.get("/_lab/faults")).json()["rules"][0]["max_fires"] == 2
