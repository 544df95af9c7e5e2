"""Bearer tokens of the Weka stand-in: login access/refresh pairs and long-lived org API tokens.

Access tokens from ``POST /login`` live ``access_ttl`` seconds (300 like Weka), refresh tokens about a
year. Org API tokens (what ``weka user generate-token`` gives, used here for the CSI driver) are access
tokens with role CSI and their own timeout (30 days by default), listed per organization.
Time comes from an injectable clock so tests can expire tokens without sleeping. Every token survives a
restart of the lab (:meth:`TokenStore.dump`, :meth:`TokenStore.restore`), so a CSI Secret stays valid.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tenantflow.lab.weka.state import WekaError

Clock = Callable[[], float]
REFRESH_TTL = 365 * 24 * 3600
API_TOKEN_TTL = 30 * 24 * 3600


@dataclass
class Session:
    username: str
    org_id: int
    role: str
    expires_at: float


@dataclass
class ApiToken:
    org_id: int
    description: str
    expires_at: float
    secret: str
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class TokenStore:
    access_ttl: int
    clock: Clock = time.time
    access: dict[str, Session] = field(default_factory=dict)
    refresh: dict[str, Session] = field(default_factory=dict)
    api_tokens: list[ApiToken] = field(default_factory=list)

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

    def create_api_token(self, org_id: int, description: str, timeout: int, role: str) -> ApiToken:
        token = ApiToken(
            org_id=org_id, description=description, expires_at=self.clock() + timeout, secret=secrets.token_urlsafe(32)
        )
        self.api_tokens.append(token)
        self.access[token.secret] = Session(f"api-token-{token.uid[:8]}", org_id, role, token.expires_at)
        return token

    def revoke_api_token(self, org_id: int, uid: str) -> None:
        token = next((t for t in self.api_tokens if t.uid == uid and t.org_id == org_id), None)
        if token is None:
            raise WekaError(404, f"Token {uid} not found")
        self.api_tokens.remove(token)
        self.access.pop(token.secret, None)

    def drop_org(self, org_id: int) -> None:
        """Invalidate every token of a deleted organization."""
        self.api_tokens = [t for t in self.api_tokens if t.org_id != org_id]
        for table in (self.access, self.refresh):
            for key in [k for k, s in table.items() if s.org_id == org_id]:
                del table[key]

    @staticmethod
    def token_dict(token: ApiToken, *, with_secret: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "uid": token.uid,
            "org_id": token.org_id,
            "description": token.description,
            "expires_at": token.expires_at,
        }
        if with_secret:
            body.update({"access_token": token.secret, "token_type": "Bearer"})
        return body

    def dump(self) -> dict[str, Any]:
        """Every token with its secret, for :meth:`restore`."""
        return {
            "access": {k: asdict(s) for k, s in self.access.items()},
            "refresh": {k: asdict(s) for k, s in self.refresh.items()},
            "api_tokens": [asdict(t) for t in self.api_tokens],
        }

    @classmethod
    def restore(cls, dump: dict[str, Any], access_ttl: int, clock: Clock) -> TokenStore:
        return cls(
            access_ttl=access_ttl,
            clock=clock,
            access={k: Session(**s) for k, s in dump["access"].items()},
            refresh={k: Session(**s) for k, s in dump["refresh"].items()},
            api_tokens=[ApiToken(**t) for t in dump["api_tokens"]],
        )
