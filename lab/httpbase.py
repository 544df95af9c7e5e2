"""Shared plumbing for every HTTP stand-in in the lab.

Each emulator is an aiohttp application built with :func:`make_app`, which adds:

* a request journal (``GET /_lab/requests``, reset with ``DELETE``) so tests can
  count the writes a workflow made ("a second run makes zero writes"); each entry's ``seq`` numbers it in the
  order the lab answered requests across every stand-in of the process (the Hub's and a worker's API servers
  alike), so a test can tell which of two servers saw what first without comparing clocks;
* fault injection (``GET/PUT/DELETE /_lab/faults``): per-route latency (time a
  request waits before its handler; a client that gives up meanwhile is never
  served, as an apiserver drops a queued request whose client left, journaled as
  ``abandoned``), error
  rates (5xx or 429 with ``Retry-After``), dropped connections (before the
  handler runs) and lost responses (``drop_after_rate``: the handler runs, its
  write is committed, then the connection is closed without the answer, journaled
  as ``lost_response``), switchable at run time by reliability tests;
* an optional snapshot hook (``GET /_lab/snapshot``) returning the emulator's
  whole state, used to prove a rollback leaves the world as it was.

Routes under ``/_lab/`` are never faulted nor journaled.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from aiohttp import web
from pydantic import BaseModel, Field

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SnapshotFn = Callable[[], Any]

CONTROL_PREFIX = "/_lab/"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DROP = "drop"
ABANDONED = "abandoned"
POLL_S = 0.05
LOST_RESPONSE = "lost_response"
COMMITTED = frozenset({None, LOST_RESPONSE})
"""Journal marks of requests whose handler ran: a lost response's write happened all the same."""
LOSE_RESPONSE_KEY = web.RequestKey("lab_lose_response", bool)
ANSWERED = itertools.count(1)
"""The journal's ``seq``: one counter for every stand-in of this process (``next`` of it is atomic)."""


class FaultRule(BaseModel):
    """One fault rule; the first rule whose method, path and query match (and that is not spent) applies."""

    path: str = Field(".*", description="regular expression searched in the request path")
    query: str = Field("", description="regular expression searched in the query string (an exec's command=...)")
    methods: list[str] = Field(default_factory=list, description="empty means every method")
    latency_ms: int = Field(0, ge=0, le=300_000)
    error_rate: float = Field(0.0, ge=0.0, le=1.0)
    error_status: int = Field(503, ge=400, le=599)
    retry_after_s: int | None = Field(None, ge=0, le=3600)
    drop_rate: float = Field(0.0, ge=0.0, le=1.0, description="close the connection without a response")
    drop_after_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="run the handler (its write is committed), then close without the response"
    )
    max_fires: int | None = Field(
        None, ge=1, description="the rule is spent after faulting this many requests (latency counts)"
    )

    def matches(self, method: str, path: str, query: str = "") -> bool:
        if self.methods and method.upper() not in {m.upper() for m in self.methods}:
            return False
        return re.search(self.path, path) is not None and re.search(self.query, query) is not None


class FaultConfig(BaseModel):
    rules: list[FaultRule] = Field(default_factory=list)
    seed: int | None = None


@dataclass
class JournalEntry:
    method: str
    path: str
    query: str
    status: int
    at: float
    injected: str | None = None
    seq: int = field(default_factory=lambda: next(ANSWERED))

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "status": self.status,
            "at": self.at,
            "injected": self.injected,
        }


@dataclass
class LabHTTPState:
    """Mutable per-app state: the journal, fault rules and counters."""

    name: str
    journal: list[JournalEntry] = field(default_factory=list)
    faults: FaultConfig = field(default_factory=FaultConfig)
    rng: random.Random = field(default_factory=random.Random)
    injected: dict[str, int] = field(default_factory=dict)
    fires: dict[int, int] = field(default_factory=dict)

    def set_faults(self, config: FaultConfig) -> None:
        self.faults = config
        self.rng = random.Random(config.seed)
        self.fires = {}

    def rule_for(self, request: web.Request) -> tuple[int, FaultRule] | None:
        return next(
            (
                (index, rule)
                for index, rule in enumerate(self.faults.rules)
                if rule.matches(request.method, request.path, request.query_string)
                and (rule.max_fires is None or self.fires.get(index, 0) < rule.max_fires)
            ),
            None,
        )

    def count_injected(self, kind: str) -> None:
        self.injected[kind] = self.injected.get(kind, 0) + 1


STATE_KEY = web.AppKey("lab_http_state", LabHTTPState)


async def _apply_fault(state: LabHTTPState, request: web.Request) -> web.StreamResponse | str | None:
    """Return a response, :data:`DROP`, :data:`ABANDONED` or :data:`LOST_RESPONSE` when a fault fires, else
    ``None``."""
    found = state.rule_for(request)
    if found is None:
        return None
    index, rule = found
    if rule.latency_ms:  # spent before the wait, so that requests arriving meanwhile see it spent
        state.fires[index] = state.fires.get(index, 0) + 1
    fault = await _rule_fault(state, rule, request)
    if fault is not None and not rule.latency_ms:
        state.fires[index] = state.fires.get(index, 0) + 1
    return fault


async def _rule_fault(state: LabHTTPState, rule: FaultRule, request: web.Request) -> web.StreamResponse | str | None:
    if rule.latency_ms:
        state.count_injected("latency")
        if not await _client_waited(request, rule.latency_ms / 1000):
            return ABANDONED
    if rule.drop_rate and state.rng.random() < rule.drop_rate:
        return DROP
    if rule.error_rate and state.rng.random() < rule.error_rate:
        state.count_injected(str(rule.error_status))
        headers = {}
        if rule.retry_after_s is not None:
            headers["Retry-After"] = str(rule.retry_after_s)
        return web.json_response(
            {
                "kind": "Status",
                "status": "Failure",
                "message": f"lab fault injected ({state.name})",
                "reason": "InjectedFault",
                "code": rule.error_status,
                "detail": "lab fault injected",
            },
            status=rule.error_status,
            headers=headers,
        )
    if rule.drop_after_rate and state.rng.random() < rule.drop_after_rate:
        return LOST_RESPONSE
    return None


async def _client_waited(request: web.Request, seconds: float) -> bool:
    """Wait ``seconds``; False as soon as the client has closed its connection (noticed by polling, or by the
    cancellation a server with ``handler_cancellation`` sends; any other cancellation goes on)."""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            if _client_gone(request):
                return False
            await asyncio.sleep(min(POLL_S, left))
    except asyncio.CancelledError:
        if not _client_gone(request):
            raise
        return False
    return True


def _client_gone(request: web.Request) -> bool:
    return request.transport is None or request.transport.is_closing()


def response_lost(request: web.Request) -> bool:
    """Whether this request's answer is to be lost: a handler that sends its answer itself (the exec
    websocket) runs its command and then returns without sending anything."""
    return request.get(LOSE_RESPONSE_KEY, False)


def _close_unanswered(state: LabHTTPState, request: web.Request, status: int, kind: str) -> NoReturn:
    """Journal the request with the status its handler reached (0 when it never ran), then abort the connection."""
    state.count_injected(kind)
    state.journal.append(JournalEntry(request.method, request.path, request.query_string, status, time.time(), kind))
    transport = request.transport
    if transport is not None:
        transport.abort()
    raise asyncio.CancelledError


@web.middleware
async def lab_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    if request.path.startswith(CONTROL_PREFIX):
        return await handler(request)
    fault = await _apply_fault(state, request)
    if fault in (DROP, ABANDONED):
        _close_unanswered(state, request, 0, str(fault))
    if isinstance(fault, web.StreamResponse):
        state.journal.append(
            JournalEntry(request.method, request.path, request.query_string, fault.status, time.time(), "error")
        )
        return fault
    lose = fault == LOST_RESPONSE
    request[LOSE_RESPONSE_KEY] = lose
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if lose:
            _close_unanswered(state, request, exc.status, LOST_RESPONSE)
        state.journal.append(JournalEntry(request.method, request.path, request.query_string, exc.status, time.time()))
        raise
    if lose:
        _close_unanswered(state, request, response.status, LOST_RESPONSE)
    state.journal.append(JournalEntry(request.method, request.path, request.query_string, response.status, time.time()))
    return response


def _control_routes(state: LabHTTPState, snapshot: SnapshotFn | None) -> list[web.RouteDef]:
    async def get_requests(_: web.Request) -> web.Response:
        entries = [e.as_dict() for e in state.journal]
        writes = sum(1 for e in state.journal if e.method in WRITE_METHODS and e.injected in COMMITTED)
        return web.json_response(
            {"service": state.name, "requests": entries, "writes": writes, "injected": state.injected}
        )

    async def reset_requests(_: web.Request) -> web.Response:
        state.journal.clear()
        state.injected.clear()
        return web.json_response({"service": state.name, "reset": True})

    async def get_faults(_: web.Request) -> web.Response:
        return web.json_response(state.faults.model_dump())

    async def put_faults(request: web.Request) -> web.Response:
        try:
            config = FaultConfig.model_validate(await request.json())
        except ValueError as exc:
            return web.json_response({"error": str(exc)}, status=422)
        state.set_faults(config)
        return web.json_response(config.model_dump())

    async def clear_faults(_: web.Request) -> web.Response:
        state.set_faults(FaultConfig())
        return web.json_response({"rules": []})

    async def get_snapshot(_: web.Request) -> web.Response:
        assert snapshot is not None
        return web.json_response(snapshot())

    routes = [
        web.get(CONTROL_PREFIX + "requests", get_requests),
        web.delete(CONTROL_PREFIX + "requests", reset_requests),
        web.get(CONTROL_PREFIX + "faults", get_faults),
        web.put(CONTROL_PREFIX + "faults", put_faults),
        web.delete(CONTROL_PREFIX + "faults", clear_faults),
    ]
    if snapshot is not None:
        routes.append(web.get(CONTROL_PREFIX + "snapshot", get_snapshot))
    return routes


def make_app(name: str, snapshot: SnapshotFn | None = None, middlewares: list[Any] | None = None) -> web.Application:
    """Build an aiohttp app with the lab's journal, fault and snapshot endpoints.

    Add the emulator's own routes to the returned app. ``middlewares`` run after
    the lab middleware (so injected faults short-circuit them).
    """
    app = web.Application(middlewares=[lab_middleware, *(middlewares or [])], client_max_size=64 * 2**20)
    state = LabHTTPState(name=name)
    app[STATE_KEY] = state
    app.add_routes(_control_routes(state, snapshot))
    return app
