"""Per-user bearer tokens for the HTTP API and the codec server: a file maps token hashes to user names.

The file named by ``TENANTFLOW_API_TOKENS_FILE`` holds one ``SHA256_HEX USER`` entry per line (blank lines
and ``#`` comments skipped); only hashes are stored, so the file reveals no token. ``tenantflow token USER``
prints a fresh token and the line to append. A request carries ``Authorization: Bearer <token>``; the
middleware answers 401 without a known token and otherwise records the user as ``request[USER_KEY]``, the
identity an approval is recorded under (a client cannot name another approver).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Middleware

TOKENS_FILE_ENV = "TENANTFLOW_API_TOKENS_FILE"
USER_KEY: web.RequestKey[str] = web.RequestKey("user", str)
USER_FORMAT = re.compile(r"^[A-Za-z0-9@._-]{1,100}$")
HASH_FORMAT = re.compile(r"^[0-9a-f]{64}$")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the line and the fix."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(user: str) -> tuple[str, str]:
    """A fresh token for ``user`` and the line that grants it in the token file."""
    if not USER_FORMAT.match(user):
        raise TokenFileError(f"user name {user!r} must match {USER_FORMAT.pattern}")
    token = secrets.token_urlsafe(32)
    return token, f"{token_hash(token)} {user}"


@dataclass(frozen=True)
class TokenTable:
    """Token hashes and the user each one authenticates."""

    users: Mapping[str, str]

    def user(self, token: str) -> str | None:
        """The user ``token`` authenticates, or None (constant-time over the known hashes)."""
        given = token_hash(token)
        found = None
        for known, user in self.users.items():
            if hmac.compare_digest(known, given):
                found = user
        return found

    @classmethod
    def parse(cls, lines: Iterable[str], source: str = "token file") -> TokenTable:
        users: dict[str, str] = {}
        for number, raw in enumerate(lines, start=1):
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            digest, _, user = entry.partition(" ")
            user = user.strip()
            if not HASH_FORMAT.match(digest) or not USER_FORMAT.match(user):
                raise TokenFileError(
                    f"{source} line {number}: expected 'SHA256_HEX USER' (make one with `tenantflow token USER`)"
                )
            users[digest] = user
        if not users:
            raise TokenFileError(f"{source}: no tokens (add one with `tenantflow token USER`)")
        return cls(users)

    @classmethod
    def load(cls, path: Path) -> TokenTable:
        try:
            return cls.parse(path.read_text().splitlines(), str(path))
        except FileNotFoundError:
            raise TokenFileError(f"{TOKENS_FILE_ENV}={path}: no such file") from None


def bearer_auth(tokens: TokenTable) -> Middleware:
    """401 without a known bearer token (CORS preflights pass: browsers send them without credentials)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS":
            return await handler(request)
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        user = tokens.user(given) if given else None
        if user is None:
            return web.json_response(
                {"error": "missing or unknown bearer token"}, status=401, headers={"WWW-Authenticate": "Bearer"}
            )
        request[USER_KEY] = user
        return await handler(request)

    return check
