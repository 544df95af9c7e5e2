"""A thin typed client of the Authentik API v3: users, groups, membership and the LDAP provider.

Only the fields the identity layer reads are modelled (unknown fields are ignored). Lists follow
Authentik's pagination envelope, whose ``next`` is ``0`` (not null) on the last page. Every failure
becomes a Temporal error through :func:`activities.common.errors.http_error` (400/403/404 fail fast, 429
and 5xx retry honouring ``Retry-After``); the API token never appears in a message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import httpx
from pydantic import Field

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.httpservice import ApiModel, HttpService
from tenantflow.activities.common.settings import settings

SERVICE = "authentik"
PAGE_SIZE = 100
M = TypeVar("M", bound=ApiModel)
K = TypeVar("K", int, str)
CREATED_BY = "tenantflow.io/created-by"
"""Attribute tenantflow puts on every Authentik user and group it creates: the creating workflow's id."""


class PartialGroup(ApiModel):
    pk: str
    name: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class PartialUser(ApiModel):
    pk: int
    username: str


class User(ApiModel):
    pk: int
    username: str
    name: str
    email: str = ""
    is_active: bool = True
    groups: list[str] = Field(default_factory=list)
    groups_obj: list[PartialGroup] | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class Group(ApiModel):
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


class LdapProvider(ApiModel):
    pk: int
    name: str
    base_dn: str
    uid_start_number: int = 2000
    gid_start_number: int = 4000


class Collection(Generic[M, K]):
    """One collection of the API (``/core/users/``, ``/core/groups/``): its objects as ``M``, addressed by primary
    keys of type ``K`` and found by the unique name in ``name_field``."""

    def __init__(self, client: AuthentikClient, path: str, model: type[M], name_field: str = "name") -> None:
        self._client = client
        self._path = path
        self._model = model
        self._name_field = name_field

    def list(self, **filters: Any) -> list[M]:
        """Every object matching ``filters`` (query parameters such as ``username``, ``include_groups``)."""
        return [self._model.model_validate(o) for o in self._client._paged(self._path, filters)]

    def named(self, name: str) -> M | None:
        """The object of this name (a user's ``username``, a group's ``name``), or None."""
        found = self.list(**{self._name_field: name})
        return found[0] if found else None

    def get(self, pk: K) -> M | None:
        """The object ``pk``, or None when there is none."""
        response = self._client._request("GET", f"{self._path}{pk}/", missing_ok=True)
        return None if response.status_code == 404 else self._model.model_validate(response.json())

    def create(self, body: dict[str, Any]) -> M:
        return self._model.model_validate(self._client._request("POST", self._path, json=body).json())

    def patch(self, pk: K, body: dict[str, Any]) -> M:
        return self._model.model_validate(self._client._request("PATCH", f"{self._path}{pk}/", json=body).json())

    def delete(self, pk: K) -> None:
        self._client._request("DELETE", f"{self._path}{pk}/")


class AuthentikClient(HttpService):
    """Synchronous calls to ``<url>/api/v3``; use as a context manager."""

    service = SERVICE
    ca_setting = "AUTHENTIK_CA_FILE"

    def __init__(self, url: str, token: str, timeout_s: float = 30.0, ca_file: str | None = None) -> None:
        super().__init__(url.rstrip("/") + "/api/v3", timeout_s, {"Authorization": f"Bearer {token}"}, ca_file)
        self.users = Collection[User, int](self, "/core/users/", User, "username")
        self.groups = Collection[Group, str](self, "/core/groups/", Group)
        self.ldap_providers = Collection[LdapProvider, int](self, "/providers/ldap/", LdapProvider)

    @classmethod
    def from_settings(cls) -> AuthentikClient:
        conf = settings()
        return cls(
            conf.authentik_url, conf.authentik_token.get_secret_value(), conf.http_timeout_s, conf.authentik_ca_file
        )

    @staticmethod
    def explain(body: Any) -> str:
        """Authentik's error text: ``{"detail"}`` or a ValidationError's field -> messages map."""
        if isinstance(body, dict):
            if isinstance(body.get("detail"), str):
                return str(body["detail"])
            return "; ".join(
                f"{key}: {' '.join(map(str, value)) if isinstance(value, list) else value}"
                for key, value in body.items()
            )
        return str(body)

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

    # -- group membership ----------------------------------------------------------------------

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
