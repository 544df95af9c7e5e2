"""Build the Weka REST API v2 stand-in with a seeded cluster (lab journal, faults and snapshot included).

Seed: organization ``Root`` (id 0) with the lab's ClusterAdmin user, filesystem group ``default`` and
the shared filesystems ``home`` and ``scratch`` owned by Root, each with ``/`` plus any ``directories``
given. ``POST /_lab/mkdir`` ``{"filesystem": "home", "path": "/alice"}`` creates directories (parents
too) the way an ``mkdir -p`` on a Weka mount would; it is lab-only, so it is neither journaled nor faulted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web

from tenantflow.lab.httpbase import CONTROL_PREFIX, make_app
from tenantflow.lab.weka.routes import routes
from tenantflow.lab.weka.service import SERVICE_KEY, WekaService, weka_middleware
from tenantflow.lab.weka.state import ROLE_CLUSTER_ADMIN, ROOT_ORG, ClusterState, Organization, WekaError, WekaUser
from tenantflow.lab.weka.tokens import Clock, TokenStore

TiB = 2**40
DEFAULT_FILESYSTEMS: Mapping[str, int] = {"home": 100 * TiB, "scratch": 500 * TiB}


def seed_cluster(
    username: str,
    password: str,
    total_bytes: int,
    filesystems: Mapping[str, int],
    directories: Mapping[str, Iterable[str]],
) -> ClusterState:
    cluster = ClusterState(name="lab-weka", total_bytes=total_bytes)
    root = Organization(id=0, name=ROOT_ORG)
    cluster.orgs[root.id] = root
    cluster.users.append(WekaUser(username=username, password=password, org_id=root.id, role=ROLE_CLUSTER_ADMIN))
    for name, capacity in filesystems.items():
        fs = cluster.create_filesystem(root.id, name, "default", capacity, None, False, False)
        for path in directories.get(name, ()):
            fs.mkdir(path)
    return cluster


def build_app(
    username: str,
    password: str,
    *,
    total_bytes: int = 2048 * TiB,
    filesystems: Mapping[str, int] = DEFAULT_FILESYSTEMS,
    directories: Mapping[str, Iterable[str]] | None = None,
    access_ttl: int = 300,
    clock: Clock = time.time,
    restored: dict[str, Any] | None = None,
) -> web.Application:
    """The Weka stand-in.

    ``username``/``password`` log in to org ``Root`` as ClusterAdmin. ``total_bytes`` is the cluster's
    provisionable capacity; ``filesystems`` maps the seeded Root filesystems to their capacity;
    ``directories`` maps a filesystem name to directories that already exist on it (e.g.
    ``{"home": ["/alice"], "scratch": ["/tenant-foo"]}``). ``clock`` drives token expiry. ``restored``, a
    :meth:`WekaService.dump` of an earlier run, is served instead of the seed.
    """
    if restored is not None:
        service = WekaService.restore(restored, access_ttl, clock)
    else:
        cluster = seed_cluster(username, password, total_bytes, filesystems, directories or {})
        service = WekaService(cluster=cluster, tokens=TokenStore(access_ttl=access_ttl, clock=clock))

    async def mkdir(request: web.Request) -> web.Response:
        body = await request.json()
        name = body.get("filesystem")
        fs = next((f for f in service.cluster.filesystems.values() if f.name == name), None)
        if fs is None:
            return web.json_response({"message": f"Filesystem {name} not found"}, status=404)
        try:
            inode = fs.mkdir(str(body.get("path", "")))
        except WekaError as exc:
            return web.json_response({"message": exc.message}, status=exc.status)
        return web.json_response({"data": {"filesystem": fs.name, "inode_id": str(inode)}})

    app = make_app("weka", snapshot=service.snapshot, middlewares=[weka_middleware])
    app[SERVICE_KEY] = service
    app.add_routes([web.post(CONTROL_PREFIX + "mkdir", mkdir)])
    app.add_routes(routes())
    return app
