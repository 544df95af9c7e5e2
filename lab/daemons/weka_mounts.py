"""The lab's stand-in for the Weka mounts of the slurmd pods: ``/scratch/<slug>`` exists only if Weka has it.

In production the SUNK NodeSet mounts the Weka scratch filesystem, so a job's ``cd /scratch/<slug>``
lands on ``wekafs``. The lab has no Weka client; :func:`sync_once` reads the Weka emulator's state
(``/_lab/snapshot``) and, for every directory ``/<name>`` of a scratch filesystem (``scratch`` or
``<slug>-scratch``), creates ``<state_dir>/mnt/scratch/<name>`` with the owner, group and mode the emulator
recorded for it (``owners``: what the directory Job's chown/chmod set, root:root 0755 before), as a mount shows
the directory's own inode: never a gid looked up by the group's name, which would hide a directory left with a
gone group's gid. It lists the directory in the mount table ``<state_dir>/mnt/mounts``
(``<fs>:/<name> <mount point> wekafs <size bytes>``, the size being the directory's hard quota when it has one).
A directory whose filesystem is gone loses its line and its folder. The ``df`` stand-in in ``lab/bin`` reads that
table (``LAB_MOUNT_TABLE``) and reports ``wekafs`` for paths below a listed mount point and the real filesystem
otherwise, so a job writing elsewhere still shows the host's root filesystem, as the runbook's 7c warns.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tenantflow.lab.changes import Changes, follow

log = logging.getLogger(__name__)

FS_TYPE = "wekafs"
SCRATCH_ROLE = "scratch"
SYNC_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Mount:
    source: str
    mount_point: Path
    size_bytes: int
    uid: int = 0
    gid: int = 0
    mode: int = 0o755

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
            owner = (fs.get("owners") or {}).get(f"/{name}") or {}
            mounts.append(
                Mount(
                    f"{fs['name']}:/{name}",
                    mount_root(state_dir) / SCRATCH_ROLE / name,
                    size,
                    int(owner.get("uid", 0)),
                    int(owner.get("gid", 0)),
                    int(str(owner.get("mode", "755")), 8),
                )
            )
    return sorted(mounts, key=lambda m: str(m.mount_point))


def apply(state_dir: Path, mounts: list[Mount]) -> None:
    """Create the mount points, remove the ones Weka no longer has, rewrite the table when it changed."""
    scratch = mount_root(state_dir) / SCRATCH_ROLE
    scratch.mkdir(mode=0o755, parents=True, exist_ok=True)
    wanted = {m.mount_point for m in mounts}
    for stale in (p for p in scratch.iterdir() if p.is_dir() and p not in wanted):
        shutil.rmtree(stale)
    for mount in mounts:
        mount.mount_point.mkdir(mode=0o700, exist_ok=True)
        info = mount.mount_point.stat()
        if (info.st_uid, info.st_gid) != (mount.uid, mount.gid):
            os.chown(mount.mount_point, mount.uid, mount.gid)
        if stat.S_IMODE(info.st_mode) != mount.mode:
            mount.mount_point.chmod(mount.mode)
    table = mount_table(state_dir)
    text = "".join(f"{m.line()}\n" for m in mounts)
    if not table.exists() or table.read_text() != text:
        tmp = table.with_name(".mounts.tmp")
        tmp.write_text(text)
        tmp.replace(table)


def read_snapshot(client: httpx.Client, weka_url: str) -> dict[str, Any]:
    response = client.get(f"{weka_url}/_lab/snapshot", timeout=5.0)
    response.raise_for_status()
    snapshot: dict[str, Any] = response.json()
    return snapshot


def sync_once(client: httpx.Client, weka_url: str, state_dir: Path) -> None:
    apply(state_dir, wanted_mounts(read_snapshot(client, weka_url), state_dir))


async def sync_loop(weka_url: str, state_dir: Path, changes: Changes, interval_s: float = SYNC_INTERVAL_S) -> None:
    """Follow the Weka emulator until cancelled (the mounts stay: they are the lab's data): at most once per
    ``interval_s`` while ``changes`` (the lab's count of Weka changes: its API's writes and the csi-wekafs
    stand-in's directories) moves, on a backing-off resync period while it does not (:func:`follow`)."""

    async def step() -> None:
        try:
            await asyncio.to_thread(sync_once, client, weka_url, state_dir)
        except Exception as exc:
            log.warning("weka mounts: sync from %s failed: %s", weka_url, exc)

    with httpx.Client() as client:
        await follow(changes, step, interval_s)
