"""A thin typed client of the Weka REST API v2: login/refresh, cluster capacity, organizations, org users,
filesystems, resolvePath and directory quotas.

Routes as Weka's public sources name them: ``POST /login``, ``/login/refresh``, ``/organizations``,
``/fileSystems``, ``GET /fileSystems/{uid}/resolvePath`` (csi-wekafs's ``ResolvePath``),
``PUT|DELETE /fileSystems/{uid}/quota/{inode_id}``, and ``GET|POST /users``, ``DELETE /users/{uid}``
(``weka user add <name> <role> <password>`` in Weka's "REST API and equivalent CLI commands"). The REST API has
no mkdir: directories are made on a mount (:mod:`activities.storage.dirs`).

Responses are ``{"data": ...}``; errors carry ``message``. A session logs in lazily with
``POST /login`` and, when the access token expires (401), renews it once with ``/login/refresh``
(falling back to a fresh login). Failures map to Temporal errors via :func:`activities.common.errors.http_error`.
Secrets (passwords, access tokens) never appear in messages. Every request has the configured timeout
(``TENANTFLOW_HTTP_TIMEOUT``, kept below the 60 s heartbeat timeout).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from tenantflow.activities.common.errors import http_error
from tenantflow.activities.common.httpservice import HttpService
from tenantflow.activities.common.settings import settings

SERVICE = "weka"


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Capacity(_Read):
    total_bytes: int
    unprovisioned_bytes: int


class Cluster(_Read):
    name: str
    capacity: Capacity


class Organization(_Read):
    uid: str
    id: int
    name: str
    total_quota: int = 0
    total_allocated: int = 0


class Filesystem(_Read):
    uid: str
    name: str
    group_name: str = ""
    total_budget: int
    free_total: int = 0


class Quota(_Read):
    inode_id: int
    path: str = ""
    hard_limit_bytes: int
    soft_limit_bytes: int
    grace_seconds: int = 0
    status: str = "ACTIVE"
    owner: str = ""


class WekaUser(_Read):
    uid: str
    username: str
    role: str = ""
    org_id: int | None = None


class Credentials(BaseModel):
    """Who to log in as; the password stays a SecretStr."""

    username: str
    password: SecretStr
    org: str = Field("Root")


def _derived_password(purpose: str) -> SecretStr:
    """A password derived from the worker's Weka password (HMAC), so it is never stored and every worker can
    recompute it."""
    digest = hmac.new(settings().weka_password.get_secret_value().encode(), purpose.encode(), hashlib.sha256).digest()
    return SecretStr(base64.urlsafe_b64encode(digest).decode().rstrip("="))


def org_admin_credentials(slug: str) -> Credentials:
    """The tenant org's admin ``admin-<short>`` (password derived, see :func:`_derived_password`)."""
    return Credentials(
        username=f"admin-{slug.removeprefix('tenant-')}", password=_derived_password(f"org-admin/{slug}"), org=slug
    )


def csi_user_credentials(slug: str) -> Credentials:
    """The tenant org's CSI user ``csi-<short>`` (role CSI), whose login goes into the csi-wekafs API Secret."""
    return Credentials(
        username=f"csi-{slug.removeprefix('tenant-')}", password=_derived_password(f"csi-user/{slug}"), org=slug
    )


class WekaClient(HttpService):
    """Synchronous calls to ``<url>/api/v2`` as one user of one organization; use as a context manager."""

    service = SERVICE
    ca_setting = "WEKA_CA_FILE"

    def __init__(self, url: str, credentials: Credentials, timeout_s: float = 30.0, ca_file: str | None = None) -> None:
        self.url = url.rstrip("/")
        self._credentials = credentials
        super().__init__(self.url + "/api/v2", timeout_s, {}, ca_file)
        self._access: str | None = None
        self._refresh: str | None = None
        self._tokens = threading.Lock()
        """Held while logging in or renewing: calls issued in parallel (:mod:`activities.common.fanout`) share one
        session."""

    @classmethod
    def from_settings(cls, credentials: Credentials | None = None) -> WekaClient:
        conf = settings()
        creds = credentials or Credentials(username=conf.weka_username, password=conf.weka_password, org=conf.weka_org)
        return cls(conf.weka_url, creds, conf.http_timeout_s, conf.weka_ca_file)

    @staticmethod
    def error_text(response: httpx.Response) -> str:
        """Weka's error text: the ``message`` of the error body."""
        try:
            body = response.json()
        except ValueError:
            return response.text[:500] or response.reason_phrase
        return str(body.get("message") if isinstance(body, dict) and body.get("message") else body)[:500]

    # -- transport and tokens --------------------------------------------------------------------

    def _send(self, method: str, path: str, *, auth: bool = True, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._access}"} if auth and self._access else {}
        return super()._send(method, path, headers=headers, **kwargs)

    def _store_tokens(self, response: httpx.Response) -> None:
        tokens = response.json()["data"]
        self._access, self._refresh = tokens["access_token"], tokens["refresh_token"]

    def login(self) -> None:
        creds = self._credentials
        response = self._send(
            "POST",
            "/login",
            auth=False,
            json={"username": creds.username, "password": creds.password.get_secret_value(), "org": creds.org},
        )
        if response.status_code == 401:
            raise http_error(SERVICE, 401, f"login as {creds.username} in org {creds.org} was refused")
        self._check("POST", "/login", response)
        self._store_tokens(response)

    def _renew(self) -> None:
        """Refresh the access token; log in again if the refresh token is no longer valid."""
        if self._refresh is not None:
            response = self._send("POST", "/login/refresh", auth=False, json={"refresh_token": self._refresh})
            if response.status_code < 400:
                self._store_tokens(response)
                return
        self.login()

    def _request(self, method: str, path: str, *, tolerate: tuple[int, ...] = (), **kwargs: Any) -> httpx.Response:
        """Send with the access token (renewed once on 401); raise unless OK or in ``tolerate``."""
        with self._tokens:
            if self._access is None:
                self.login()
            used = self._access
        response = self._send(method, path, **kwargs)
        if response.status_code == 401:
            with self._tokens:
                if self._access == used:
                    self._renew()
            response = self._send(method, path, **kwargs)
        if response.status_code not in tolerate:
            self._check(method, path, response)
        return response

    def _data(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()["data"]

    # -- cluster and organizations ---------------------------------------------------------------

    def cluster(self) -> Cluster:
        return Cluster.model_validate(self._data("GET", "/cluster"))

    def organizations(self) -> list[Organization]:
        return [Organization.model_validate(o) for o in self._data("GET", "/organizations")]

    def organization(self, name: str) -> Organization | None:
        return next((o for o in self.organizations() if o.name == name), None)

    def create_organization(self, name: str, admin: Credentials) -> Organization:
        return Organization.model_validate(
            self._data(
                "POST",
                "/organizations",
                json={"name": name, "username": admin.username, "password": admin.password.get_secret_value()},
            )
        )

    def delete_organization(self, uid: str) -> None:
        self._request("DELETE", f"/organizations/{uid}")

    # -- org users (the CSI driver's login) ------------------------------------------------------

    def users(self) -> list[WekaUser]:
        """The users of the session's organization."""
        return [WekaUser.model_validate(u) for u in self._data("GET", "/users")]

    def create_user(self, username: str, password: SecretStr, role: str) -> WekaUser:
        """``weka user add``: a user of the session's organization."""
        return WekaUser.model_validate(
            self._data(
                "POST", "/users", json={"username": username, "password": password.get_secret_value(), "role": role}
            )
        )

    def delete_user(self, uid: str) -> bool:
        """Delete; False when the user was already gone."""
        return self._request("DELETE", f"/users/{uid}", tolerate=(404,)).status_code != 404

    # -- filesystems, directories, quotas --------------------------------------------------------

    def filesystems(self) -> list[Filesystem]:
        return [Filesystem.model_validate(f) for f in self._data("GET", "/fileSystems")]

    def filesystem(self, name: str) -> Filesystem | None:
        return next((f for f in self.filesystems() if f.name == name), None)

    def create_filesystem(self, name: str, total_capacity: int, group_name: str = "default") -> Filesystem:
        return Filesystem.model_validate(
            self._data(
                "POST", "/fileSystems", json={"name": name, "group_name": group_name, "total_capacity": total_capacity}
            )
        )

    def delete_filesystem(self, uid: str) -> None:
        self._request("DELETE", f"/fileSystems/{uid}")

    def resolve_path(self, fs_uid: str, path: str) -> int | None:
        """The directory's inode id, or None when it does not exist (Weka answers 400 PATH_NOT_FOUND)."""
        url = f"/fileSystems/{fs_uid}/resolvePath"
        response = self._request("GET", url, tolerate=(400,), params={"path": path})
        if response.status_code == 400 and "PATH_NOT_FOUND" in self.error_text(response):
            return None
        self._check("GET", url, response)
        return int(response.json()["data"]["inode_id"])

    def quotas(self, fs_uid: str) -> dict[int, Quota]:
        """The directory quotas of a filesystem by inode id. ``data`` comes in two shapes: an object keyed by
        quota id (as Backend.AI's Weka client reads it) or a list of quotas (as csi-wekafs's apiclient decodes
        it); both are read, and each quota is keyed by its own ``inode_id``."""
        body = self._data("GET", f"/fileSystems/{fs_uid}/quota") or {}
        listed = body.values() if isinstance(body, dict) else body
        return {quota.inode_id: quota for quota in (Quota.model_validate(item) for item in listed)}

    def set_quota(self, fs_uid: str, inode_id: int, path: str, hard: int, soft: int, owner: str = "") -> Quota:
        """Create or replace the directory quota; ``owner`` is the quota's free-text owner (``weka fs quota set
        --owner``), where tenantflow writes its marker."""
        body: dict[str, Any] = {"hard_limit_bytes": hard, "soft_limit_bytes": soft, "grace_seconds": 0, "path": path}
        if owner:
            body["owner"] = owner
        return Quota.model_validate(self._data("PUT", f"/fileSystems/{fs_uid}/quota/{inode_id}", json=body))

    def delete_quota(self, fs_uid: str, inode_id: int) -> bool:
        response = self._request("DELETE", f"/fileSystems/{fs_uid}/quota/{inode_id}", tolerate=(404,))
        return response.status_code != 404
