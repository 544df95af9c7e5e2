"""A thin typed client of the Authentik API v3: users, groups, membership and the LDAP provider.

Only the fields the identity layer reads are modelled (unknown fields are ignored). Lists follow
Authentik's pagination envelope, whose ``next`` is ``0`` (not null) on the last page. Every failure
becomes a Temporal error through :func:`activities.common.errors.http_error` (400/403/404 fail fast, 429
and 5xx retry honouring ``Retry-After``); the API token never appears in a message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.httpservice import HttpService
from tenantflow.activities.common.settings import settings

SERVICE = "authentik"
PAGE_SIZE = 100
CREATED_BY = "tenantflow.io/created-by"
"""Attribute tenantflow puts on every Authentik user and group it creates: the creating workflow's id."""


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PartialGroup(_Read):
    pk: str
    name: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class PartialUser(_Read):
    pk: int
    username: str


class User(_Read):
    pk: int
    username: str
    name: str
    email: str = ""
    is_active: bool = True
    groups: list[str] = Field(default_factory=list)
    groups_obj: list[PartialGroup] | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class Group(_Read):
    """A group as either shape serves it: ``parent`` (one or null, up to 2025.10) or ``parents`` (later)."""

    pk: str
    num_pk: int
    name: str
    parents: list[str] = Field(default_factory=list)
    parent: str | None = None
    users: list[int] = Field(default_factory=list)
    users_obj: list[PartialUser] | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)

    @property
    def parent_pks(self) -> list[str]:
        return [self.parent] if self.parent else list(self.parents)


class LdapProvider(_Read):
    pk: int
    name: str
    base_dn: str
    uid_start_number: int = 2000
    gid_start_number: int = 4000


class AuthentikClient(HttpService):
    """Synchronous calls to ``<url>/api/v3``; use as a context manager."""

    service = SERVICE
    ca_setting = "AUTHENTIK_CA_FILE"

    def __init__(self, url: str, token: str, timeout_s: float = 30.0, ca_file: str | None = None) -> None:
        super().__init__(url.rstrip("/") + "/api/v3", timeout_s, {"Authorization": f"Bearer {token}"}, ca_file)

    @classmethod
    def from_settings(cls) -> AuthentikClient:
        conf = settings()
        return cls(
            conf.authentik_url, conf.authentik_token.get_secret_value(), conf.http_timeout_s, conf.authentik_ca_file
        )

    @staticmethod
    def error_text(response: httpx.Response) -> str:
        """Authentik's error text: ``{"detail"}`` or a ValidationError's field -> messages map."""
        try:
            body = response.json()
        except ValueError:
            return response.text[:500] or response.reason_phrase
        if isinstance(body, dict):
            if isinstance(body.get("detail"), str):
                return str(body["detail"])
            return "; ".join(
                f"{key}: {' '.join(map(str, value)) if isinstance(value, list) else value}"
                for key, value in body.items()
            )
        return str(body)[:500]

    def _request(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: Any) -> httpx.Response:
        """Send and raise on failure; with ``missing_ok`` a 404 is returned for the caller to read."""
        response = self._send(method, path, **kwargs)
        if not (missing_ok and response.status_code == 404):
            self._check(method, path, response)
        return response

    def _paged(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        page = 1
        while page:
            body = self._request("GET", path, params={**params, "page": page, "page_size": PAGE_SIZE}).json()
            yield from body["results"]
            page = int(body["pagination"]["next"] or 0)

    # -- users -----------------------------------------------------------------------------------

    def users(self, **filters: Any) -> list[User]:
        return [User.model_validate(u) for u in self._paged("/core/users/", filters)]

    def user_by_username(self, username: str) -> User | None:
        found = self.users(username=username)
        return found[0] if found else None

    def user(self, pk: int) -> User | None:
        response = self._request("GET", f"/core/users/{pk}/", missing_ok=True)
        return None if response.status_code == 404 else User.model_validate(response.json())

    def create_user(self, body: dict[str, Any]) -> User:
        return User.model_validate(self._request("POST", "/core/users/", json=body).json())

    def patch_user(self, pk: int, body: dict[str, Any]) -> User:
        return User.model_validate(self._request("PATCH", f"/core/users/{pk}/", json=body).json())

    # -- groups ----------------------------------------------------------------------------------

    def groups(self, **filters: Any) -> list[Group]:
        return [Group.model_validate(g) for g in self._paged("/core/groups/", filters)]

    def group_by_name(self, name: str) -> Group | None:
        found = self.groups(name=name)
        return found[0] if found else None

    def group(self, pk: str) -> Group | None:
        response = self._request("GET", f"/core/groups/{pk}/", missing_ok=True)
        return None if response.status_code == 404 else Group.model_validate(response.json())

    def create_group(self, body: dict[str, Any]) -> Group:
        return Group.model_validate(self._request("POST", "/core/groups/", json=body).json())

    def patch_group(self, pk: str, body: dict[str, Any]) -> Group:
        return Group.model_validate(self._request("PATCH", f"/core/groups/{pk}/", json=body).json())

    def delete_group(self, pk: str) -> None:
        self._request("DELETE", f"/core/groups/{pk}/")

    def add_user(self, group_pk: str, user_pk: int) -> None:
        self._request("POST", f"/core/groups/{group_pk}/add_user/", json={"pk": user_pk})

    def remove_user(self, group_pk: str, user_pk: int) -> None:
        self._request("POST", f"/core/groups/{group_pk}/remove_user/", json={"pk": user_pk})

    # -- server -----------------------------------------------------------------------------------

    def version(self) -> str:
        """The running release, ``GET /admin/version/`` ``version_current`` (e.g. ``2024.10.5``)."""
        return str(self._request("GET", "/admin/version/").json()["version_current"])

    def parent_field(self) -> str | None:
        """``parent`` (one group) or ``parents`` (a list): the field that nests a group, read from how the server
        serializes the platform's parent group (``AUTHENTIK_PARENT_GROUP``), not guessed from the version:
        releases up to 2025.10 (and the authentik-client 2025.10 package) serve ``parent``, later ones
        ``parents``, and each silently ignores the other's field on writes. ``None`` when that group does not
        exist (preflight refuses the run then)."""
        name = settings().authentik_parent_group
        found = self._request("GET", "/core/groups/", params={"name": name, "page_size": 1}).json()["results"]
        if not found:
            return None
        for field in ("parents", "parent"):
            if field in found[0]:
                return field
        raise fail(
            "Unsupported",
            f"Authentik serves group {name!r} with neither 'parent' nor 'parents'; this release is not supported",
        )

    # -- LDAP provider ---------------------------------------------------------------------------

    def ldap_providers(self) -> list[LdapProvider]:
        return [LdapProvider.model_validate(p) for p in self._paged("/providers/ldap/", {})]
