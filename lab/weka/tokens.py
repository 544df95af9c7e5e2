"""Bearer tokens of the Weka stand-in: login access/refresh pairs.

Access tokens from ``POST /login`` live ``access_ttl`` seconds (300 like Weka), refresh tokens about a
year. The CSI driver logs in as an org user (role CSI) like any other client, so there is no token of
ours to hand out. Time comes from an injectable clock so tests can expire tokens without sleeping. Every
token survives a restart of the lab (:meth:`TokenStore.dump`, :meth:`TokenStore.restore`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tenantflow.lab.weka.state import WekaError

Clock = Callable[[], float]
REFRESH_TTL = 365 * 24 * 3600


@dataclass
class Session:
    username: str
    org_id: int
    role: str
    expires_at: float


@dataclass
class TokenStore:
    access_ttl: int
    clock: Clock = time.time
    access: dict[str, Session] = field(default_factory=dict)
    refresh: dict[str, Session] = field(default_factory=dict)

    def login(self, username: str, org_id: int, role: str) -> dict[str, Any]:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = self.clock()
        self.access[access] = Session(username, org_id, role, now + self.access_ttl)
        self.refresh[refresh] = Session(username, org_id, role, now + REFRESH_TTL)
        return {"access_token": access, "token_type": "Bearer", "expires_in": self.access_ttl, "refresh_token": refresh}

    def renew(self, refresh_token: str) -> dict[str, Any]:
        session = self.refresh.pop(refresh_token, None)
        if session is None or session.expires_at <= self.clock():
            raise WekaError(401, "Invalid or expired refresh token")
        return self.login(session.username, session.org_id, session.role)

    def authenticate(self, header: str) -> Session:
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "bearer" or not credential:
            raise WekaError(401, "Authentication required: missing bearer token")
        session = self.access.get(credential.strip())
        if session is None:
            raise WekaError(401, "Invalid token")
        if session.expires_at <= self.clock():
            raise WekaError(401, "Token expired")
        return session

    def drop_user(self, username: str, org_id: int) -> None:
        """Invalidate the sessions of a deleted user."""
        for table in (self.access, self.refresh):
            for key in [k for k, s in table.items() if s.username == username and s.org_id == org_id]:
                del table[key]

    def drop_org(self, org_id: int) -> None:
        """Invalidate every token of a deleted organization."""
        for table in (self.access, self.refresh):
            for key in [k for k, s in table.items() if s.org_id == org_id]:
                del table[key]

    def dump(self) -> dict[str, Any]:
        """Every token with its secret, for :meth:`restore`."""
        return {
            "access": {k: asdict(s) for k, s in self.access.items()},
            "refresh": {k: asdict(s) for k, s in self.refresh.items()},
        }

    @classmethod
    def restore(cls, dump: dict[str, Any], access_ttl: int, clock: Clock) -> TokenStore:
        return cls(
            access_ttl=access_ttl,
            clock=clock,
            access={k: Session(**s) for k, s in dump["access"].items()},
            refresh={k: Session(**s) for k, s in dump["refresh"].items()},
        )
