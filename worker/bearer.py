"""The HTTP API's and the codec server's authentication: an aiohttp middleware over the token file of
:mod:`worker.tokens`.

A request carries ``Authorization: Bearer <token>`` (the scheme is required; a bare token is refused and told so).
The middleware answers 401 without a known token and otherwise records the user as ``request[USER_KEY]`` (the
identity an approval is recorded under: a client cannot name another approver) and the grants as
``request[GRANTS_KEY]``, for the role checks of the HTTP API (:mod:`tenantflow.starter.api_auth`) and of the codec
server (:mod:`tenantflow.worker.codec_server`). While the token file is invalid every request gets 503, naming the
line and the fix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware

from tenantflow.worker.tokens import Grant, TokenFileError, TokenSource

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
log = structlog.get_logger("tenantflow.tokens")

USER_KEY: web.RequestKey[str] = web.RequestKey("user", str)
GRANTS_KEY: web.RequestKey[tuple[Grant, ...]] = web.RequestKey("grants", tuple)


def refused(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message, "fields": []}, status=status, headers=headers)


def unauthenticated(message: str) -> web.Response:
    return refused(401, message, {"WWW-Authenticate": "Bearer"})


def bearer_auth(tokens: TokenSource) -> Middleware:
    """401 without ``Authorization: Bearer <known token>`` (CORS preflights pass: browsers send them without
    credentials); 503 while the token file is invalid."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS":
            return await handler(request)
        header = request.headers.get("Authorization", "").strip()
        if not header:
            return unauthenticated("no Authorization header: send `Authorization: Bearer <token>`")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return unauthenticated("the Authorization header must be `Bearer <token>`: put `Bearer ` before the token")
        try:
            table = tokens.current()
        except TokenFileError as exc:
            log.error("token file unusable", error=str(exc))
            return refused(503, f"the token file is unusable: {exc}; fix it (it is read again on every request)")
        entry = table.entry(given.strip())
        if entry is None:
            return unauthenticated(
                "unknown bearer token: it is not in the token file (never added, or removed from it)"
            )
        request[USER_KEY] = entry.user
        request[GRANTS_KEY] = entry.grants
        return await handler(request)

    return check
