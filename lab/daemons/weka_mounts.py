"""The lab's stand-in for the Weka mounts of the slurmd pods: ``/scratch/<slug>`` exists only if Weka has it.

In production the SUNK NodeSet mounts the Weka scratch filesystem, so a job's ``cd /scratch/<slug>``
lands on ``wekafs``. The lab has no Weka client; :func:`sync_once` reads the Weka emulator's state
(``/_lab/snapshot``) and, for every directory ``/<name>`` of a scratch filesystem (``scratch`` or
``<slug>-scratch``), creates ``<state_dir>/mnt/scratch/<name>`` (root-owned, group = the tenant's
group when the host resolves it, mode 2770, like a tenant directory with POSIX RBAC) and lists it in
the mount table ``<state_dir>/mnt/mounts`` (``<fs>:/<name> <mount point> wekafs <size bytes>``, the
size being the directory's hard quota when it has one). A directory whose filesystem is gone loses its
line and its folder. The ``df`` stand-in in ``lab/bin`` reads that table (``LAB_MOUNT_TABLE``) and
reports ``wekafs`` for paths below a listed mount point and the real filesystem otherwise, so a job
writing elsewhere still shows the host's root filesystem, as the runbook's 7c warns.
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tenantflow.lab.daemons.host_users import lab_nss_dir

log = logging.getLogger(__name__)

FS_TYPE = "wekafs"
SCRATCH_ROLE = "scratch"
SYNC_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Mount:
    source: str
    mount_point: Path
    size_bytes: int

    def line(self) -> str:
        return f"{self.source} {self.mount_point} {FS_TYPE} {self.size_bytes}"


def mount_root(state_dir: Path) -> Path:
    """Where the lab mounts Weka directories (``<root>/scratch/<slug>`` stands in for ``/scratch/<slug>``)."""
    return state_dir / "mnt"


def mount_table(state_dir: Path) -> Path:
    return mount_root(state_dir) / "mounts"


def _is_scratch(fs_name: str) -> bool:
    return fs_name == SCRATCH_ROLE or fs_name.endswith(f"-{SCRATCH_ROLE}")


def wanted_mounts(snapshot: dict[str, Any], state_dir: Path) -> list[Mount]:
    """One mount per top-level directory of each scratch filesystem in the Weka snapshot."""
    mounts = []
    for fs in snapshot.get("filesystems", []):
        if not _is_scratch(str(fs["name"])):
            continue
        quotas = {str(q.get("path")): int(q.get("hard_limit_bytes") or 0) for q in fs.get("quotas", [])}
        for directory in fs.get("directories", []):
            name = str(directory).strip("/")
            if not name or "/" in name:
                continue
            size = quotas.get(f"/{name}") or int(fs["total_capacity"])
            mounts.append(Mount(f"{fs['name']}:/{name}", mount_root(state_dir) / SCRATCH_ROLE / name, size))
    return sorted(mounts, key=lambda m: str(m.mount_point))


def _group_id(state_dir: Path, name: str) -> int | None:
    """The group's gid as this lab's slurmd pods resolve it (its own NSS files; None while they lack it), else
    (a lab without them) as the host does. Never the host's view when the lab has its own: with several labs
    on one host, the host's merged view may hold another lab's group of the same name and gid."""
    own = lab_nss_dir(state_dir) / "group"
    if own.exists():
        for line in own.read_text().splitlines():
            fields = line.split(":")
            if len(fields) >= 3 and fields[0] == name and fields[2].isdigit():
                return int(fields[2])
        return None
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def apply(state_dir: Path, mounts: list[Mount]) -> None:
    """Create the mount points, remove the ones Weka no longer has, rewrite the table when it changed."""
    scratch = mount_root(state_dir) / SCRATCH_ROLE
    scratch.mkdir(mode=0o755, parents=True, exist_ok=True)
    wanted = {m.mount_point for m in mounts}
    for stale in (p for p in scratch.iterdir() if p.is_dir() and p not in wanted):
        shutil.rmtree(stale)
    for mount in mounts:
        mount.mount_point.mkdir(mode=0o770, exist_ok=True)
        gid = _group_id(state_dir, mount.mount_point.name)
        info = mount.mount_point.stat()
        if gid is not None and info.st_gid != gid:
            os.chown(mount.mount_point, 0, gid)
            mount.mount_point.chmod(0o2770)
    table = mount_table(state_dir)
    text = "".join(f"{m.line()}\n" for m in mounts)
    if not table.exists() or table.read_text() != text:
        tmp = table.with_name(".mounts.tmp")
        tmp.write_text(text)
        tmp.replace(table)


def read_snapshot(weka_url: str) -> dict[str, Any]:
    response = httpx.get(f"{weka_url}/_lab/snapshot", timeout=5.0)
    response.raise_for_status()
    snapshot: dict[str, Any] = response.json()
    return snapshot


def sync_once(weka_url: str, state_dir: Path) -> None:
    apply(state_dir, wanted_mounts(read_snapshot(weka_url), state_dir))


async def sync_loop(weka_url: str, state_dir: Path, interval_s: float = SYNC_INTERVAL_S) -> None:
    """Follow the Weka emulator until cancelled (the mounts stay: they are the lab's data)."""
    while True:
        try:
            await asyncio.to_thread(sync_once, weka_url, state_dir)
        except Exception as exc:
            log.warning("weka mounts: sync from %s failed: %s", weka_url, exc)
        await asyncio.sleep(interval_s)
