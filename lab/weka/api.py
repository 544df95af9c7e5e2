"""HTTP handlers of the Weka REST API v2 stand-in (``/api/v2``): ``{"data": ...}`` envelopes, errors as
``{"message": ...}`` with 400/401/403/404/409, bearer tokens scoped to one organization."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tenantflow.lab.weka.state import (
    ROLE_CLUSTER_ADMIN,
    ROLE_CSI,
    ROLE_ORG_ADMIN,
    ROOT_ORG,
    ClusterState,
    FileSystem,
    Organization,
    Quota,
    WekaError,
    WekaUser,
    normalise_path,
)
from tenantflow.lab.weka.tokens import Clock, Session, TokenStore

PREFIX = "/api/v2"
PUBLIC_PATHS = frozenset({f"{PREFIX}/login", f"{PREFIX}/login/refresh"})
FS_WRITERS = frozenset({ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN, ROLE_CSI})


@dataclass
class WekaService:
    cluster: ClusterState
    tokens: TokenStore

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


def _service(request: web.Request) -> WekaService:
    return request.app[SERVICE_KEY]


def _session(request: web.Request) -> Session:
    return request[SESSION_KEY]


def _require_role(request: web.Request, roles: frozenset[str]) -> Session:
    session = _session(request)
    if session.role not in roles:
        raise WekaError(403, f"Role {session.role} may not perform this operation")
    return session


def _require_cluster_admin(request: web.Request) -> Session:
    session = _require_role(request, frozenset({ROLE_CLUSTER_ADMIN}))
    if _service(request).cluster.orgs[session.org_id].name != ROOT_ORG:
        raise WekaError(403, "Only a cluster admin of the Root organization may manage organizations")
    return session


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise WekaError(400, f"Invalid JSON body: {exc}") from exc
    if not isinstance(body, dict):
        raise WekaError(400, "Request body must be a JSON object")
    return body


def _str(body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise WekaError(400, f"Missing required field: {key}")
        return None
    if not isinstance(value, str) or not value:
        raise WekaError(400, f"Field {key} must be a non-empty string")
    return value


def _int(body: dict[str, Any], *keys: str, required: bool = False) -> int | None:
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


# -- login and identity --------------------------------------------------------------------------


async def login(request: web.Request) -> web.Response:
    service = _service(request)
    body = await _body(request)
    username, password = _str(body, "username"), _str(body, "password")
    org = service.cluster.org_by_name(_str(body, "org", required=False) or ROOT_ORG)
    user = next(
        (u for u in service.cluster.users if org is not None and u.username == username and u.org_id == org.id), None
    )
    if user is None or user.password != password:
        raise WekaError(401, "Username or password are incorrect")
    return data(service.tokens.login(user.username, user.org_id, user.role))


async def refresh(request: web.Request) -> web.Response:
    token = _str(await _body(request), "refresh_token")
    assert token is not None
    return data(_service(request).tokens.renew(token))


async def whoami(request: web.Request) -> web.Response:
    session = _session(request)
    org = _service(request).cluster.orgs[session.org_id]
    return data(
        {
            "username": session.username,
            "role": session.role,
            "org_id": org.id,
            "org_name": org.name,
            "source": "Internal",
        }
    )


async def token_expiry(request: web.Request) -> web.Response:
    return data({"access_token_expiry": _service(request).tokens.access_ttl, "refresh_token_expiry": 365 * 24 * 3600})


async def cluster(request: web.Request) -> web.Response:
    return data(_service(request).cluster.cluster_dict())


# -- organizations -------------------------------------------------------------------------------


async def list_orgs(request: web.Request) -> web.Response:
    _require_cluster_admin(request)
    state = _service(request).cluster
    return data([state.org_dict(o) for o in sorted(state.orgs.values(), key=lambda o: o.id)])


async def multiple_orgs_exist(request: web.Request) -> web.Response:
    return data(len(_service(request).cluster.orgs) > 1)


async def create_org(request: web.Request) -> web.Response:
    _require_cluster_admin(request)
    body = await _body(request)
    name, username, password = _str(body, "name"), _str(body, "username"), _str(body, "password")
    assert name is not None and username is not None and password is not None
    state = _service(request).cluster
    org = state.create_org(name, username, password, _int(body, "ssd_quota") or 0, _int(body, "total_quota") or 0)
    return data(state.org_dict(org), status=201)


def _org(request: web.Request) -> Organization:
    _require_cluster_admin(request)
    return _service(request).cluster.org(request.match_info["uid"])


async def get_org(request: web.Request) -> web.Response:
    return data(_service(request).cluster.org_dict(_org(request)))


async def update_org(request: web.Request) -> web.Response:
    org = _org(request)
    body = await _body(request)
    state = _service(request).cluster
    new_name = _str(body, "name", required=False)
    if new_name is not None and new_name != org.name:
        if org.name == ROOT_ORG or state.org_by_name(new_name) is not None:
            raise WekaError(409, f"Cannot rename organization {org.name} to {new_name}")
        org.name = new_name
    return data(state.org_dict(org))


async def set_org_limits(request: web.Request) -> web.Response:
    org = _org(request)
    body = await _body(request)
    state = _service(request).cluster
    state.set_org_limits(org, _int(body, "ssd_quota"), _int(body, "total_quota"))
    return data(state.org_dict(org))


async def delete_org(request: web.Request) -> web.Response:
    org = _org(request)
    service = _service(request)
    service.cluster.delete_org(org)
    service.tokens.drop_org(org.id)
    return data(None)


# -- users of the caller's organization --------------------------------------------------------

USER_ADMINS = frozenset({ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN})


def _user_dict(user: WekaUser) -> dict[str, Any]:
    return {"uid": user.uid, "username": user.username, "role": user.role, "org_id": user.org_id, "source": "Internal"}


async def list_users(request: web.Request) -> web.Response:
    session = _require_role(request, USER_ADMINS)
    return data([_user_dict(u) for u in _service(request).cluster.users if u.org_id == session.org_id])


async def create_user(request: web.Request) -> web.Response:
    """``weka user add <username> <role> <password>``: a user of the caller's organization."""
    session = _require_role(request, USER_ADMINS)
    body = await _body(request)
    username, password, role = _str(body, "username"), _str(body, "password"), _str(body, "role")
    assert username is not None and password is not None and role is not None
    user = _service(request).cluster.create_user(session.org_id, username, password, role)
    return data(_user_dict(user), status=201)


async def delete_user(request: web.Request) -> web.Response:
    session = _require_role(request, USER_ADMINS)
    service = _service(request)
    user = next(
        (u for u in service.cluster.users if u.uid == request.match_info["uid"] and u.org_id == session.org_id), None
    )
    if user is None:
        raise WekaError(404, f"User {request.match_info['uid']} not found")
    if user.username == session.username:
        raise WekaError(400, "A user cannot delete itself")
    service.cluster.users.remove(user)
    service.tokens.drop_user(user.username, user.org_id)
    return data(None)


# -- filesystems ---------------------------------------------------------------------------------


def _fs(request: web.Request) -> FileSystem:
    return _service(request).cluster.filesystem(request.match_info["uid"], _session(request).org_id)


async def list_filesystems(request: web.Request) -> web.Response:
    org_id = _session(request).org_id
    owned = [f for f in _service(request).cluster.filesystems.values() if f.org_id == org_id]
    return data([f.as_dict() for f in sorted(owned, key=lambda f: f.id)])


async def create_filesystem(request: web.Request) -> web.Response:
    session = _require_role(request, FS_WRITERS)
    body = await _body(request)
    name, group = _str(body, "name"), _str(body, "group_name")
    total = _int(body, "total_capacity", required=True)
    assert name is not None and group is not None and total is not None
    fs = _service(request).cluster.create_filesystem(
        session.org_id,
        name,
        group,
        total,
        _int(body, "ssd_capacity"),
        bool(body.get("encrypted", False)),
        bool(body.get("auth_required", False)),
    )
    return data(fs.as_dict(), status=201)


async def get_filesystem(request: web.Request) -> web.Response:
    return data(_fs(request).as_dict())


async def update_filesystem(request: web.Request) -> web.Response:
    _require_role(request, FS_WRITERS)
    fs = _fs(request)
    body = await _body(request)
    _service(request).cluster.update_filesystem(
        fs, _str(body, "new_name", required=False), _int(body, "total_capacity"), _int(body, "ssd_capacity")
    )
    return data(fs.as_dict())


async def delete_filesystem(request: web.Request) -> web.Response:
    _require_role(request, FS_WRITERS)
    fs = _fs(request)
    del _service(request).cluster.filesystems[fs.uid]
    return data(None)


async def resolve_path(request: web.Request) -> web.Response:
    fs = _fs(request)
    raw = request.query.get("path")
    if raw is None:
        raise WekaError(400, "Missing required query parameter: path")
    path = normalise_path(raw)
    if path != raw.rstrip("/") and raw != "/":
        raise WekaError(400, f"Path {raw} is not normalised")
    inode = fs.directories.get(path)
    if inode is None:
        raise WekaError(400, f"PATH_NOT_FOUND: {path} does not exist on filesystem {fs.name}")
    return data({"inode_id": str(inode), "path": path})


# -- directory quotas ----------------------------------------------------------------------------


def _inode(request: web.Request, fs: FileSystem) -> tuple[int, str]:
    raw = request.match_info["inode_id"]
    path = fs.path_of(int(raw)) if raw.isdigit() else None
    if path is None:
        raise WekaError(404, f"Inode {raw} not found on filesystem {fs.name}")
    return int(raw), path


def _limits(body: dict[str, Any], current: Quota | None) -> tuple[int, int, int]:
    hard = _int(body, "hard_limit_bytes", "hardLimitBytes")
    soft = _int(body, "soft_limit_bytes", "softLimitBytes")
    grace = _int(body, "grace_seconds", "graceSeconds")
    hard = hard if hard is not None else (current.hard_limit_bytes if current else None)
    soft = soft if soft is not None else (current.soft_limit_bytes if current else hard)
    if hard is None or soft is None:
        raise WekaError(400, "Missing required field: hard_limit_bytes")
    if soft > hard:
        raise WekaError(400, "soft_limit_bytes must not exceed hard_limit_bytes")
    grace = grace if grace is not None else (current.grace_seconds if current else 0)
    return hard, soft, grace


async def list_quotas(request: web.Request) -> web.Response:
    fs = _fs(request)
    return data({str(q.inode_id): q.as_dict() for q in sorted(fs.quotas.values(), key=lambda q: q.inode_id)})


async def get_quota(request: web.Request) -> web.Response:
    fs = _fs(request)
    inode, _ = _inode(request, fs)
    quota = fs.quotas.get(inode)
    if quota is None:
        raise WekaError(404, f"No quota on inode {inode}")
    return data(quota.as_dict())


async def set_quota(request: web.Request) -> web.Response:
    """PUT creates or replaces the directory quota; PATCH changes an existing one."""
    fs = _fs(request)
    inode, path = _inode(request, fs)
    body = await _body(request)
    current = fs.quotas.get(inode)
    if request.method == "PATCH" and current is None:
        raise WekaError(404, f"No quota on inode {inode}")
    if "path" in body and normalise_path(str(body["path"])) != path:
        raise WekaError(400, f"Path {body['path']} does not match inode {inode} ({path})")
    hard, soft, grace = _limits(body, current if request.method == "PATCH" else None)
    quota = Quota(
        inode_id=inode,
        path=path,
        hard_limit_bytes=hard,
        soft_limit_bytes=soft,
        grace_seconds=grace,
        owner=str(body.get("owner", current.owner if current else "")),
    )
    fs.quotas[inode] = quota
    return data(quota.as_dict())


async def delete_quota(request: web.Request) -> web.Response:
    fs = _fs(request)
    inode, _ = _inode(request, fs)
    if fs.quotas.pop(inode, None) is None:
        raise WekaError(404, f"No quota on inode {inode}")
    return data(None)


def routes() -> list[web.RouteDef]:
    org = f"{PREFIX}/organizations/{{uid}}"
    fs = f"{PREFIX}/fileSystems/{{uid}}"
    quota = fs + "/quota/{inode_id}"
    return [
        web.post(f"{PREFIX}/login", login),
        web.post(f"{PREFIX}/login/refresh", refresh),
        web.get(f"{PREFIX}/users/whoami", whoami),
        web.get(f"{PREFIX}/security/defaultTokensExpiry", token_expiry),
        web.get(f"{PREFIX}/cluster", cluster),
        web.get(f"{PREFIX}/organizations", list_orgs),
        web.post(f"{PREFIX}/organizations", create_org),
        web.get(f"{PREFIX}/organizations/multipleOrgsExist", multiple_orgs_exist),
        web.get(org, get_org),
        web.put(org, update_org),
        web.delete(org, delete_org),
        web.put(org + "/limits", set_org_limits),
        web.get(f"{PREFIX}/users", list_users),
        web.post(f"{PREFIX}/users", create_user),
        web.delete(f"{PREFIX}/users/{{uid}}", delete_user),
        web.get(f"{PREFIX}/fileSystems", list_filesystems),
        web.post(f"{PREFIX}/fileSystems", create_filesystem),
        web.get(fs, get_filesystem),
        web.put(fs, update_filesystem),
        web.delete(fs, delete_filesystem),
        web.get(fs + "/resolvePath", resolve_path),
        web.get(fs + "/quota", list_quotas),
        web.get(quota, get_quota),
        web.put(quota, set_quota),
        web.patch(quota, set_quota),
        web.delete(quota, delete_quota),
        web.delete(fs + "/quotas/{inode_id}", delete_quota),
    ]
