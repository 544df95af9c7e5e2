"""What the lab's csi-wekafs is, from weka/csi-wekafs's public examples, and the only commands its mounts can run.

The lab plays csi-wekafs and the kubelet, so it takes none of this from tenantflow's models (a key or handle
tenantflow got wrong would then be wrong in the lab too):

* ``examples/common/csi-wekafs-api-secret.yaml``: the API Secret holds ``username``, ``password``,
  ``organization`` and ``endpoints`` (:data:`REQUIRED_SECRET_KEYS`);
* ``examples/static_volume/static_filesystem/pv-wekafs-fs-static-api.yaml``: "volumeHandle must be formatted as
  following: weka/v2/<FILE_SYSTEM_NAME>" (:func:`handle_filesystem`), driver ``csi.weka.io`` (:data:`DRIVER`).

The lab runs no shell: a container on a Weka mount is run only when its command is one of the two POSIX ``sh``
scripts below, which the stand-in executes step by step on the emulator as ``sh``, coreutils and BusyBox would.
The scripts are the two a directory helper needs on Weka (whose REST API has no mkdir or rmdir); the lab knows
them by their text, so a helper that sends anything else (a changed script, other arguments) is left unrun and
the caller's wait fails; one whose ``$0`` is not where the volume is mounted fails as ``cd`` would.
"""

from __future__ import annotations

import posixpath
import re

DRIVER = "csi.weka.io"
"""csi-wekafs's driver name (``CSIDriver`` ``csi.weka.io``; the examples' ``provisioner`` and ``csi.driver``)."""
CSI_DRIVER_OBJECT = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": DRIVER},
    "spec": {
        "attachRequired": True,
        "podInfoOnMount": True,
        "volumeLifecycleModes": ["Persistent"],
        "fsGroupPolicy": "File",
    },
}
"""The ``CSIDriver`` the csi-wekafs chart installs (``charts/csi-wekafsplugin/templates/driver.yaml``: name
``csiDriverName``, attach required, pod info on mount, persistent volumes, ``fsGroupPolicy`` default ``File``)."""
REQUIRED_SECRET_KEYS = ("username", "password", "organization", "endpoints")
"""``examples/common/csi-wekafs-api-secret.yaml``: the keys the plugin's API client cannot start without."""
FS_HANDLE_PREFIX = "weka/v2/"
"""The static filesystem volume's handle: ``weka/v2/<FILE_SYSTEM_NAME>`` (csi-wekafs static_filesystem example)."""

MKDIR_SCRIPT = (
    'cd "$0"; while [ $# -gt 0 ]; do if [ -d ".$1" ]; then echo "before $1 $(stat -c \'%u %g %a\' -- ".$1")"; fi; '
    'mkdir -p -- ".$1"; chown -- "$2:$3" ".$1"; chmod -- "$4" ".$1"; shift 4; done'
)
"""Run as ``sh -ec MKDIR_SCRIPT MOUNT path uid gid mode ...``: per directory, when it exists, ``before <path>
<stat -c '%u %g %a'>`` (GNU coreutils and BusyBox ``stat``: uid, gid, octal permission bits), then ``mkdir -p``,
``chown uid:gid``, ``chmod mode``."""
REMOVE_SCRIPT = 'cd "$0"; for p; do if [ -d ".$p" ]; then rm -rf -- ".$p"; echo "removed $p"; fi; done'
"""Run as ``sh -ec REMOVE_SCRIPT MOUNT path ...``: each directory that exists is removed with all it holds and
``removed <path>`` printed."""
_PLAIN_PATH = re.compile(r"(/[A-Za-z0-9._-]+)+")
_MODE = re.compile(r"[0-7]{3,4}")


def handle_filesystem(handle: str) -> str | None:
    """The filesystem a ``weka/v2/<fs>`` handle mounts (None for any other handle)."""
    rest = handle.removeprefix(FS_HANDLE_PREFIX)
    return rest if rest != handle and rest and "/" not in rest else None


def _plain(path: str) -> bool:
    """A plain absolute path (no ``.``/``..`` parts, no doubled ``/``): one the stand-in can follow as ``sh``."""
    return _PLAIN_PATH.fullmatch(path) is not None and posixpath.normpath(path) == path


Mkdir = tuple[str, int, int, int]
"""One directory :data:`MKDIR_SCRIPT` makes: (path below the mount, uid, gid, mode)."""


def mount_path(command: list[str]) -> str | None:
    """Where a command running one of the scripts expects the mount (its ``$0``, which the script ``cd``s to)."""
    return command[3] if len(command) > 3 and _plain(command[3]) else None


def mkdir_run(command: list[str]) -> list[Mkdir] | None:
    """Each directory ``command`` makes when it runs :data:`MKDIR_SCRIPT`; None for any other command (or
    arguments the stand-in cannot follow as plainly as ``sh``, ``chown`` and ``chmod`` would)."""
    if command[:3] != ["/bin/sh", "-ec", MKDIR_SCRIPT] or mount_path(command) is None or len(command[4:]) % 4:
        return None
    args = command[4:]
    runs = []
    for i in range(0, len(args), 4):
        path, uid, gid, mode = args[i : i + 4]
        if not (_plain(path) and uid.isdigit() and gid.isdigit() and _MODE.fullmatch(mode)):
            return None
        runs.append((path, int(uid), int(gid), int(mode, 8)))
    return runs


def remove_run(command: list[str]) -> list[str] | None:
    """The paths ``command`` removes when it runs :data:`REMOVE_SCRIPT`; None for any other command."""
    if command[:3] != ["/bin/sh", "-ec", REMOVE_SCRIPT] or mount_path(command) is None or not command[4:]:
        return None
    return command[4:] if all(_plain(path) for path in command[4:]) else None


def before_line(path: str, uid: int, gid: int, mode: int) -> str:
    """What :data:`MKDIR_SCRIPT` prints for a directory that existed (``stat -c '%u %g %a'``: ``%a`` in octal)."""
    return f"before {path} {uid} {gid} {mode:o}"


def removed_line(path: str) -> str:
    """What :data:`REMOVE_SCRIPT` prints for a directory it removed."""
    return f"removed {path}"
