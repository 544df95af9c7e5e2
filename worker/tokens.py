"""Per-user bearer tokens for the HTTP API and the codec server: a file maps token hashes to users and their roles.

The file named by ``TENANTFLOW_API_TOKENS_FILE`` holds one entry per line (blank lines and ``#`` comments
skipped)::

    SHA256_HEX USER ROLE:PATTERN [ROLE:PATTERN ...]
    3f9a...c2 alice requester:tenant-a* approver:tenant-*
    77b0...e1 ci viewer:*

Only hashes are stored, so the file reveals no token; ``tenantflow token USER --role ROLE:PATTERN`` prints a fresh
token and the line to append. Each ``ROLE:PATTERN`` is a :class:`Grant`: a role (:class:`Role`) over the targets
whose name the fnmatch-style, case-sensitive ``PATTERN`` matches (a tenant by its slug, ``tenant-*``; a worker
cluster as ``workerclusters/<namespace>/<worker>``; ``*`` matches everything). Every line needs at least one grant.

Requests are checked against it by the middleware of :mod:`tenantflow.worker.bearer`, over the targets of
:mod:`tenantflow.worker.targets`. :class:`TokenFile` reads the file again on every request and parses it again when
its bytes changed, so a token removed from it stops working at once, without a restart; a file that became invalid
refuses every request (503, naming the line and the fix) until it is fixed, rather than keep serving tokens that
may have been revoked in that edit.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Protocol

TOKENS_FILE_ENV = "TENANTFLOW_API_TOKENS_FILE"
USER_FORMAT = re.compile(r"^[A-Za-z0-9@._-]{1,100}$")
HASH_FORMAT = re.compile(r"^[0-9a-f]{64}$")
PATTERN_FORMAT = re.compile(r"^[A-Za-z0-9*?\[\]!/._-]{1,200}$")
ENTRY_FORMAT = "'SHA256_HEX USER ROLE:PATTERN ...' (make one with `tenantflow token USER --role ROLE:PATTERN`)"


class Role(StrEnum):
    """What a token may do: ``viewer`` reads runs, plans and terms; ``requester`` also starts, changes, renews,
    offboards and cancels; ``approver`` also answers gates; ``admin`` does all of it."""

    viewer = "viewer"
    requester = "requester"
    approver = "approver"
    admin = "admin"


@dataclass(frozen=True)
class Grant:
    """A role over the targets whose name ``pattern`` matches (fnmatch, case-sensitive)."""

    role: Role
    pattern: str

    def includes(self, role: Role) -> bool:
        """Whether this grant's role gives ``role``: each includes itself and viewer, admin includes all."""
        return self.role in (role, Role.admin) or role is Role.viewer

    def covers(self, name: str) -> bool:
        return fnmatchcase(name, self.pattern)

    def __str__(self) -> str:
        return f"{self.role}:{self.pattern}"

    @classmethod
    def parse(cls, text: str) -> Grant:
        """``ROLE:PATTERN``; a :class:`TokenFileError` naming what is wrong and the fix."""
        role, colon, pattern = text.partition(":")
        if not colon:
            raise TokenFileError(f"{text!r} is not ROLE:PATTERN (e.g. viewer:tenant-*)")
        if role not in Role.__members__:
            raise TokenFileError(f"{text!r}: unknown role {role!r}; roles are {', '.join(Role)}")
        if not PATTERN_FORMAT.match(pattern):
            raise TokenFileError(f"{text!r}: the pattern must match {PATTERN_FORMAT.pattern} (e.g. tenant-a*, *)")
        return cls(Role(role), pattern)


@dataclass(frozen=True)
class TokenEntry:
    """Who a token authenticates and what it may do."""

    user: str
    grants: tuple[Grant, ...]


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the line and the fix."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(user: str, grants: Sequence[str]) -> tuple[str, str]:
    """A fresh token for ``user`` with ``grants`` (each ``ROLE:PATTERN``) and the line that grants it in the token
    file."""
    if not USER_FORMAT.match(user):
        raise TokenFileError(f"user name {user!r} must match {USER_FORMAT.pattern}")
    if not grants:
        raise TokenFileError(f"give {user} at least one role: --role ROLE:PATTERN (roles: {', '.join(Role)})")
    parsed = [str(Grant.parse(grant)) for grant in grants]
    token = secrets.token_urlsafe(32)
    return token, " ".join([token_hash(token), user, *parsed])


@dataclass(frozen=True)
class TokenTable:
    """Token hashes and the entry each one authenticates."""

    entries: Mapping[str, TokenEntry]

    def entry(self, token: str) -> TokenEntry | None:
        """Who ``token`` authenticates, or None (constant-time over the known hashes)."""
        given = token_hash(token)
        found = None
        for known, entry in self.entries.items():
            if hmac.compare_digest(known, given):
                found = entry
        return found

    def current(self) -> TokenTable:
        """Itself: a table parsed once (a :class:`TokenSource` that never changes)."""
        return self

    @classmethod
    def parse(cls, lines: Iterable[str], source: str = "token file") -> TokenTable:
        entries: dict[str, TokenEntry] = {}
        first_seen: dict[str, int] = {}
        for number, raw in enumerate(lines, start=1):
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            digest, *rest = entry.split()
            user, *grants = rest or [""]
            where = f"{source} line {number}"
            if not HASH_FORMAT.match(digest) or not USER_FORMAT.match(user):
                raise TokenFileError(f"{where}: expected {ENTRY_FORMAT}")
            if not grants:
                raise TokenFileError(
                    f"{where}: no roles for {user}: append ROLE:PATTERN to the line (roles: {', '.join(Role)}; "
                    "e.g. viewer:tenant-*)"
                )
            if digest in first_seen:
                raise TokenFileError(f"{where}: the token of line {first_seen[digest]} again; keep one line per token")
            try:
                entries[digest] = TokenEntry(user, tuple(Grant.parse(grant) for grant in grants))
            except TokenFileError as exc:
                raise TokenFileError(f"{where}: {exc}") from None
            first_seen[digest] = number
        if not entries:
            raise TokenFileError(f"{source}: no tokens (add one with `tenantflow token USER --role ROLE:PATTERN`)")
        return cls(entries)


class TokenSource(Protocol):
    def current(self) -> TokenTable:
        """The tokens in force now; a :class:`TokenFileError` when they cannot be known."""
        ...


class TokenFile:
    """The token file, read again on every :meth:`current` (a small file: one read) and parsed again only when its
    bytes changed: an edit takes effect on the next request, whether written in place or renamed over it (as a
    Kubernetes Secret volume does)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._parsed: tuple[bytes, TokenTable] | None = None

    def current(self) -> TokenTable:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise TokenFileError(f"{TOKENS_FILE_ENV}={self.path}: no such file") from None
        if self._parsed is None or self._parsed[0] != raw:
            try:
                text = raw.decode()
            except UnicodeDecodeError:
                raise TokenFileError(f"{self.path}: not UTF-8 text; expected {ENTRY_FORMAT}") from None
            self._parsed = (raw, TokenTable.parse(text.splitlines(), str(self.path)))
        return self._parsed[1]
