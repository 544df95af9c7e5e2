"""How tenantflow reaches Weka through csi-wekafs: the API Secret's keys, volume handles and the directory helper.

Public sources (weka/csi-wekafs on GitHub):

* ``examples/common/csi-wekafs-api-secret.yaml``: the API Secret holds ``username``, ``password``,
  ``organization`` and ``endpoints`` (comma-separated ``host:port``), optionally ``scheme``,
  ``localContainerName``, ``autoUpdateEndpoints``, ``nfsTargetIps`` and ``caCertificate``;
* ``examples/dynamic_directory/storageclass-wekafs-dir-api.yaml``: a directory-backed class
  (``volumeType: dir/v1``, ``filesystemName``, ``capacityEnforcement``, ``ownerUid``/``ownerGid``/``permissions``
  and the ``csi.storage.k8s.io/*-secret-{name,namespace}`` parameters);
* ``examples/static_volume/static_filesystem``: a static PersistentVolume whose ``volumeHandle`` is
  ``weka/v2/<filesystem>`` mounts the whole filesystem (its root) into a pod.

Weka's REST API has no mkdir, so directories are made on a mount: a short-lived Job mounts the filesystem
through such a static volume and runs :data:`DIRECTORY_SCRIPT`: per directory, when it already exists, one
line ``before <path> <uid> <gid> <mode>`` on stdout (``stat -c '%u %g %a'``, GNU coreutils and BusyBox), then
``mkdir -p``, ``chown uid:gid`` and ``chmod mode``. The values are positional arguments of a fixed script, never
part of it. The product builds the command with :func:`directory_command` and reads the container's log (the
Kubernetes ``pods/log`` API) back with :func:`parse_owners`. The lab's csi-wekafs runs the script on its own
terms (``lab/weka/csi_facts.py``), sharing nothing with this module, and tests compare the two.

Nor has it an rmdir: a purge of a tenant whose directories live in the shared filesystems runs
:data:`REMOVE_SCRIPT` the same way, which removes each directory that exists with everything in it
(``rm -rf``) and prints ``removed <path>`` for it; :func:`removal_command` builds it, :func:`parse_removed`
reads the log.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

DRIVER = "csi.weka.io"
REQUIRED_SECRET_KEYS = ("username", "password", "organization", "endpoints")
OPTIONAL_SECRET_KEYS = ("scheme", "caCertificate", "localContainerName", "autoUpdateEndpoints", "nfsTargetIps")
SECRET_PARAMETERS = ("provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish")
MOUNT_PATH = "/weka"
FS_HANDLE_PREFIX = "weka/v2/"
DIRECTORY_SCRIPT = (
    'cd "$0"; while [ $# -gt 0 ]; do if [ -d ".$1" ]; then echo "before $1 $(stat -c \'%u %g %a\' -- ".$1")"; fi; '
    'mkdir -p -- ".$1"; chown -- "$2:$3" ".$1"; chmod -- "$4" ".$1"; shift 4; done'
)
REMOVE_SCRIPT = 'cd "$0"; for p; do if [ -d ".$p" ]; then rm -rf -- ".$p"; echo "removed $p"; fi; done'
_SAFE_PATH = re.compile(r"^(/[A-Za-z0-9._-]+)+$")
_REMOVED = re.compile(r"removed (?P<path>(/[A-Za-z0-9._-]+)+)")
_BEFORE = re.compile(r"before (?P<path>(/[A-Za-z0-9._-]+)+) (?P<uid>[0-9]+) (?P<gid>[0-9]+) (?P<mode>[0-7]{1,4})")


def secret_parameters(name: str, namespace: str) -> dict[str, str]:
    """Every ``csi.storage.k8s.io/*-secret-{name,namespace}`` parameter pointing at one API Secret."""
    params: dict[str, str] = {}
    for use in SECRET_PARAMETERS:
        params[f"csi.storage.k8s.io/{use}-secret-name"] = name
        params[f"csi.storage.k8s.io/{use}-secret-namespace"] = namespace
    return params


def filesystem_handle(filesystem: str) -> str:
    """The ``volumeHandle`` of a static volume mounting the whole filesystem."""
    return FS_HANDLE_PREFIX + filesystem


def check_path(path: str) -> str:
    """``path`` when it is a plain absolute path below the mount's root (no ``.``/``..``, no doubled ``/``)."""
    if not _SAFE_PATH.fullmatch(path) or posixpath.normpath(path) != path:
        raise ValueError(f"not a plain absolute path: {path!r}")
    return path


@dataclass(frozen=True)
class DirectorySpec:
    """One directory to make on the mounted filesystem, with its owner and mode (octal, e.g. ``2770``)."""

    path: str
    uid: int
    gid: int
    mode: str

    def __post_init__(self) -> None:
        check_path(self.path)
        if not re.fullmatch(r"[0-7]{3,4}", self.mode):
            raise ValueError(f"not an octal mode: {self.mode!r}")
        if self.uid < 0 or self.gid < 0:
            raise ValueError("uid and gid must not be negative")


@dataclass(frozen=True)
class Owner:
    """A directory's owner, group and permission bits, as ``stat`` reports them."""

    uid: int
    gid: int
    mode: int

    @classmethod
    def of(cls, spec: DirectorySpec) -> Owner:
        return cls(spec.uid, spec.gid, int(spec.mode, 8))


def parse_owners(log: str) -> dict[str, Owner]:
    """The owners the script found before changing anything, by path (only directories that existed)."""
    owners: dict[str, Owner] = {}
    for line in log.splitlines():
        match = _BEFORE.fullmatch(line.strip())
        if match:
            owners[match["path"]] = Owner(int(match["uid"]), int(match["gid"]), int(match["mode"], 8))
    return owners


def directory_command(specs: list[DirectorySpec]) -> list[str]:
    """The container command: ``sh -ec SCRIPT <mount> path uid gid mode ...``."""
    args = [str(v) for s in specs for v in (s.path, s.uid, s.gid, s.mode)]
    return ["/bin/sh", "-ec", DIRECTORY_SCRIPT, MOUNT_PATH, *args]


def removal_command(paths: list[str]) -> list[str]:
    """The container command that removes ``paths`` (plain absolute paths) and all they hold."""
    return ["/bin/sh", "-ec", REMOVE_SCRIPT, MOUNT_PATH, *(check_path(path) for path in paths)]


def parse_removed(log: str) -> set[str]:
    """The paths the removal script removed (those that existed)."""
    return {match["path"] for line in log.splitlines() if (match := _REMOVED.fullmatch(line.strip()))}
