"""Weka REST API v2 stand-in handlers for storage: filesystems of the caller's organization, path resolution
(``resolvePath``) and directory quotas."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tenantflow.lab.weka.service import data, int_field, read_body, require_role, service_of, session_of, text_field
from tenantflow.lab.weka.state import (
    ROLE_CLUSTER_ADMIN,
    ROLE_CSI,
    ROLE_ORG_ADMIN,
    FileSystem,
    Quota,
    WekaError,
    normalise_path,
)

FS_WRITERS = frozenset({ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN, ROLE_CSI})


# -- filesystems ---------------------------------------------------------------------------------


def _fs(request: web.Request) -> FileSystem:
    return service_of(request).cluster.filesystem(request.match_info["uid"], session_of(request).org_id)


async def list_filesystems(request: web.Request) -> web.Response:
    org_id = session_of(request).org_id
    owned = [f for f in service_of(request).cluster.filesystems.values() if f.org_id == org_id]
    return data([f.as_dict() for f in sorted(owned, key=lambda f: f.id)])


async def create_filesystem(request: web.Request) -> web.Response:
    session = require_role(request, FS_WRITERS)
    body = await read_body(request)
    name, group = text_field(body, "name"), text_field(body, "group_name")
    total = int_field(body, "total_capacity", required=True)
    assert name is not None and group is not None and total is not None
    fs = service_of(request).cluster.create_filesystem(
        session.org_id,
        name,
        group,
        total,
        int_field(body, "ssd_capacity"),
        bool(body.get("encrypted", False)),
        bool(body.get("auth_required", False)),
    )
    return data(fs.as_dict(), status=201)


async def get_filesystem(request: web.Request) -> web.Response:
    return data(_fs(request).as_dict())


async def update_filesystem(request: web.Request) -> web.Response:
    require_role(request, FS_WRITERS)
    fs = _fs(request)
    body = await read_body(request)
    new_name = text_field(body, "new_name", required=False)
    total, ssd = int_field(body, "total_capacity"), int_field(body, "ssd_capacity")
    service_of(request).cluster.update_filesystem(fs, new_name, total, ssd)
    return data(fs.as_dict())


async def delete_filesystem(request: web.Request) -> web.Response:
    require_role(request, FS_WRITERS)
    fs = _fs(request)
    del service_of(request).cluster.filesystems[fs.uid]
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
    hard = int_field(body, "hard_limit_bytes", "hardLimitBytes")
    soft = int_field(body, "soft_limit_bytes", "softLimitBytes")
    grace = int_field(body, "grace_seconds", "graceSeconds")
    hard = hard if hard is not None else (current.hard_limit_bytes if current else None)
    soft = soft if soft is not None else (current.soft_limit_bytes if current else hard)
    if hard is None or soft is None:
        raise WekaError(400, "Missing required field: hard_limit_bytes")
    if soft > hard:
        raise WekaError(400, "soft_limit_bytes must not exceed hard_limit_bytes")
    grace = grace if grace is not None else (current.grace_seconds if current else 0)
    return hard, soft, grace


async def list_quotas(request: web.Request) -> web.Response:
    """The filesystem's quotas in the shape the service answers in (:data:`lab.weka.service.QUOTA_LIST_SHAPES`)."""
    fs = _fs(request)
    quotas = [q.as_dict() for q in sorted(fs.quotas.values(), key=lambda q: q.inode_id)]
    if service_of(request).quota_list == "listed":
        return data(quotas)
    return data({str(q["inode_id"]): q for q in quotas})


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
    body = await read_body(request)
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
