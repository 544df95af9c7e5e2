"""The Weka REST API v2 stand-in's request plumbing: the service the handlers share, the bearer-token middleware,
``{"data": ...}`` envelopes, errors as ``{"message": ...}`` with 400/401/403/404/409, role checks and body fields.

Handlers: :mod:`lab.weka.accounts` (login, identity, organizations, users), :mod:`lab.weka.filesystems`
(filesystems, paths, directory quotas); :mod:`lab.weka.routes` maps them under ``/api/v2``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tenantflow.lab.weka.state import ROLE_CLUSTER_ADMIN, ROOT_ORG, ClusterState, WekaError
from tenantflow.lab.weka.tokens import Clock, Session, TokenStore

PREFIX = "/api/v2"
QUOTA_LIST_SHAPES = ("keyed", "listed")
"""The two shapes of ``GET /fileSystems/{uid}/quota``'s ``data`` the stand-in can answer: ``keyed``, an object keyed
by quota id (as Backend.AI's Weka client reads it), and ``listed``, a JSON array of quotas (weka/csi-wekafs
``pkg/wekafs/apiclient/quota.go``, ``FindQuotaByFilter``: ``a.Get(ctx, query.GetBasePath(a), nil, &[]Quota{})``,
the base path being ``fileSystems/<uid>/quota``)."""
PUBLIC_PATHS = frozenset({f"{PREFIX}/login", f"{PREFIX}/login/refresh"})


@dataclass
class WekaService:
    cluster: ClusterState
    tokens: TokenStore
    quota_list: str = "keyed"
    """Which of :data:`QUOTA_LIST_SHAPES` the quota list answers in (a setting of the lab, not of the cluster)."""

    def snapshot(self) -> dict[str, Any]:
        return self.cluster.snapshot()

    def dump(self) -> dict[str, Any]:
        """The cluster and every token, for :meth:`restore` after a restart of the lab."""
        return {"cluster": self.cluster.dump(), "tokens": self.tokens.dump()}

    @classmethod
    def restore(cls, dump: dict[str, Any], access_ttl: int, clock: Clock) -> WekaService:
        return cls(
            cluster=ClusterState.restore(dump["cluster"]), tokens=TokenStore.restore(dump["tokens"], access_ttl, clock)
        )


SERVICE_KEY = web.AppKey("weka_service", WekaService)
SESSION_KEY = web.RequestKey("weka_session", Session)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def data(payload: Any, status: int = 200) -> web.Response:
    return web.json_response({"data": payload}, status=status)


@web.middleware
async def weka_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Token check for everything but login, and mapping of :class:`WekaError` onto error bodies."""
    if not request.path.startswith(PREFIX + "/"):
        return await handler(request)
    try:
        if request.path not in PUBLIC_PATHS:
            service = request.app[SERVICE_KEY]
            request[SESSION_KEY] = service.tokens.authenticate(request.headers.get("Authorization", ""))
        return await handler(request)
    except WekaError as exc:
        return web.json_response({"message": exc.message, "data": None}, status=exc.status)


def service_of(request: web.Request) -> WekaService:
    return request.app[SERVICE_KEY]


def session_of(request: web.Request) -> Session:
    return request[SESSION_KEY]


def require_role(request: web.Request, roles: frozenset[str]) -> Session:
    session = session_of(request)
    if session.role not in roles:
        raise WekaError(403, f"Role {session.role} may not perform this operation")
    return session


def require_cluster_admin(request: web.Request) -> Session:
    session = require_role(request, frozenset({ROLE_CLUSTER_ADMIN}))
    if service_of(request).cluster.orgs[session.org_id].name != ROOT_ORG:
        raise WekaError(403, "Only a cluster admin of the Root organization may manage organizations")
    return session


async def read_body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise WekaError(400, f"Invalid JSON body: {exc}") from exc
    if not isinstance(body, dict):
        raise WekaError(400, "Request body must be a JSON object")
    return body


def text_field(body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise WekaError(400, f"Missing required field: {key}")
        return None
    if not isinstance(value, str) or not value:
        raise WekaError(400, f"Field {key} must be a non-empty string")
    return value


def int_field(body: dict[str, Any], *keys: str, required: bool = False) -> int | None:
    """The first of ``keys`` present (snake_case first, then csi-wekafs's older camelCase)."""
    for key in keys:
        if key in body:
            value = body[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise WekaError(400, f"Field {key} must be a non-negative integer (bytes or seconds)")
            return value
    if required:
        raise WekaError(400, f"Missing required field: {keys[0]}")
    return None
