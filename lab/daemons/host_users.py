"""Make this host resolve the lab's LDAP users through NSS, as SUNK's slurmd pods do with nsscache.

In production the slurmctld/slurmd pods resolve tenant users from the Authentik LDAP outpost
(SUNK runs nsscache, which periodically dumps the directory into files that an NSS module reads).
The lab does the same with Debian's ``libnss-extrausers``: :func:`sync_once` reads every
``posixAccount`` and ``posixGroup`` from the lab's slapd (bound as the outpost's bind user, like
nsscache) and :func:`publish` writes ``/var/lib/extrausers/passwd`` and ``group``, which glibc reads
after ``/etc/passwd`` once :func:`ensure_nsswitch` has added ``extrausers`` after ``files`` on the
``passwd`` and ``group`` lines of ``/etc/nsswitch.conf``. ``getent passwd alice``, ``sbatch --uid``,
slurmctld and slurmstepd then all see the same uid/gid as the login pod. :func:`sync_loop` repeats the
sync at most every second while the directory changes (``LabContext.directory``: writes to the Authentik
stand-in, which projects them into slapd; following every write of the lab re-read the whole directory each
second of every onboarding, a sixth of the lab's CPU) and on a resync period backing off to half a minute while it
is idle (nsscache's cron, shortened) and :func:`withdraw` removes the lab's entries when it
stops; ``lab down`` stops it with ``lab serve``.

Several labs can run on one host, each numbering its users from 2000, so one set of files cannot be
right for all of them. Each lab therefore writes its own pair, ``<state_dir>/nss/{passwd,group}``, and
its Slurm daemons run in a private mount namespace where that folder is bind-mounted over
``/var/lib/extrausers`` (:func:`in_lab_namespace`; the slurmctld pod's exec handler enters the same
namespace): that is the lab's "slurmd pod" view, exact for every lab. For the host's own ``getent``
each lab also publishes a fragment ``/var/lib/extrausers/tenantflow.d/<key>.json`` (key from the state
folder, stamped with the owning process's pid and start time); the host files are the merge of the
fragments whose owner still runs, oldest first, a name or number taken by an earlier lab winning.
The host's own users always win: names or numbers already in ``/etc/passwd`` / ``/etc/group`` and
numbers below 1000 are never published.

Home directories: the outpost says ``/home/<user>``; the lab's stand-in for the Weka ``/home`` mount is
``<state_dir>/home``, so published entries point there and :func:`ensure_homes` creates each home
(mode 0700, owned by the user) and makes the folders above it searchable, since jobs run as the user
and write ``slurm-<id>.out`` into their working directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ldap3 import SUBTREE, Entry

from tenantflow.lab import pitfalls
from tenantflow.lab.changes import Changes, follow
from tenantflow.lab.daemons import ldap_tree
from tenantflow.lab.daemons.process import proc_start_time

log = logging.getLogger(__name__)

EXTRAUSERS_DIR = Path("/var/lib/extrausers")
NSSWITCH = Path("/etc/nsswitch.conf")
NSS_MODULE = "extrausers"
DATABASES = ("passwd", "group")
MIN_ID = 1000
NAMESPACE_SLURM_DIR = Path("/run/tenantflow-lab-slurm")
"""Where a lab's Slurm daemons see its ``<state_dir>/slurm``: slurmd and slurmstepd make Unix sockets in
``SlurmdSpoolDir`` and PMIx in ``TmpFS``, and a socket path longer than 108 bytes (``sun_path``) fails the job's
launch (``_create_socket: Unix socket path ... is too long``), so those two settings name this short path rather
than a state folder that may lie deep below a checkout or a test's temporary folder."""
SHELL = "/bin/bash"
OUTPOST_HOME = "/home/"
SYNC_INTERVAL_S = 1.0


@dataclass(frozen=True)
class PasswdEntry:
    name: str
    uid: int
    gid: int
    gecos: str
    home: str

    def line(self) -> str:
        return f"{self.name}:x:{self.uid}:{self.gid}:{self.gecos}:{self.home}:{SHELL}"


@dataclass(frozen=True)
class GroupEntry:
    name: str
    gid: int
    members: tuple[str, ...]

    def line(self) -> str:
        return f"{self.name}:x:{self.gid}:{','.join(self.members)}"


def lab_nss_dir(state_dir: Path) -> Path:
    """This lab's extrausers files, mounted over /var/lib/extrausers for its Slurm daemons."""
    return state_dir / "nss"


def in_lab_namespace(state_dir: Path, argv: list[str]) -> list[str]:
    """``argv`` in a private mount namespace that sees :func:`lab_nss_dir` as /var/lib/extrausers and the lab's
    Slurm folder as :data:`NAMESPACE_SLURM_DIR`."""
    nss = lab_nss_dir(state_dir)
    nss.mkdir(mode=0o755, parents=True, exist_ok=True)
    for database in DATABASES:
        (nss / database).touch(mode=0o644)
    slurm = state_dir / "slurm"
    slurm.mkdir(parents=True, exist_ok=True)
    for mountpoint in (EXTRAUSERS_DIR, NAMESPACE_SLURM_DIR):
        mountpoint.mkdir(mode=0o755, parents=True, exist_ok=True)
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        f'mount --bind "$0" {EXTRAUSERS_DIR} && mount --bind "$1" {NAMESPACE_SLURM_DIR} && shift && exec "$@"',
        str(nss),
        str(slurm),
        *argv,
    ]


def home_root(state_dir: Path) -> Path:
    """The lab's stand-in for the Weka ``/home`` mount."""
    return state_dir / "home"


def ensure_nsswitch(path: Path = NSSWITCH) -> bool:
    """Put ``extrausers`` right after ``files`` on the passwd and group lines; True when it changed the file."""
    lines = path.read_text().splitlines(keepends=True)
    changed = False
    for i, line in enumerate(lines):
        key, sep, sources = line.partition(":")
        if key.strip() not in DATABASES or not sep or NSS_MODULE in sources.split():
            continue
        words = sources.split()
        at = words.index("files") + 1 if "files" in words else 0
        words.insert(at, NSS_MODULE)
        lines[i] = f"{key}:{' ' * max(1, 16 - len(key) - 1)}{' '.join(words)}\n"
        changed = True
    if changed:
        tmp = path.with_name(f".{path.name}.tenantflow")
        tmp.write_text("".join(lines))
        tmp.chmod(0o644)
        tmp.replace(path)
    return changed


def read_directory(
    url: str, bind_dn: str, password: str, state_dir: Path
) -> tuple[list[PasswdEntry], list[GroupEntry]]:
    """Every posixAccount and posixGroup the outpost serves, homes moved below :func:`home_root`."""
    with ldap_tree.connect(url, bind_dn, password) as conn:
        conn.search(
            ldap_tree.USERS_DN,
            "(objectClass=posixAccount)",
            search_scope=SUBTREE,
            attributes=["uid", "uidNumber", "gidNumber", "displayName", "homeDirectory"],
        )
        users = [
            PasswdEntry(
                _one(e, "uid"),
                int(_one(e, "uidNumber")),
                int(_one(e, "gidNumber")),
                _one(e, "displayName"),
                _home(_one(e, "homeDirectory"), state_dir),
            )
            for e in conn.entries
        ]
        conn.search(
            ldap_tree.BASE_DN,
            "(objectClass=posixGroup)",
            search_scope=SUBTREE,
            attributes=["cn", "gidNumber", "member"],
        )
        groups = [
            GroupEntry(
                _one(e, "cn"),
                int(_one(e, "gidNumber")),
                tuple(sorted(dn.split(",", 1)[0].split("=", 1)[1] for dn in _all(e, "member"))),
            )
            for e in conn.entries
        ]
    return users, groups


def _all(entry: Entry, attribute: str) -> list[str]:
    """The values of ``attribute`` as slapd sent them (strings: the connection reads no schema)."""
    return [str(value) for value in entry.entry_attributes_as_dict.get(attribute, [])]


def _one(entry: Entry, attribute: str) -> str:
    """The first value of ``attribute``, or "" without one."""
    return next(iter(_all(entry, attribute)), "")


def _home(outpost_home: str, state_dir: Path) -> str:
    if outpost_home.startswith(OUTPOST_HOME):
        return str(home_root(state_dir) / outpost_home.removeprefix(OUTPOST_HOME))
    return outpost_home


def _fragments_dir(root: Path) -> Path:
    return root / "tenantflow.d"


def _key(state_dir: Path) -> str:
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    _fragments_dir(root).mkdir(parents=True, exist_ok=True)
    with (root / ".tenantflow.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _host_names_and_ids(path: Path) -> tuple[set[str], set[int]]:
    names, ids = set(), set()
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[2].isdigit():
                names.add(fields[0])
                ids.add(int(fields[2]))
    return names, ids


def _write_if_changed(path: Path, text: str) -> None:
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    tmp.replace(path)


def _published(fragments: list[dict[str, Any]]) -> dict[str, str]:
    """The passwd and group files for ``fragments`` (earlier ones win), without the host's own entries.

    A number taken by the host or an earlier lab is skipped; inside one lab a number may repeat, as in
    the directory itself: each user's virtual group (``ou=virtual-groups``) has the user's gidNumber,
    which is the tenant group's, and both must resolve (dropping the later one would hide ``tenant-foo``
    whenever its entry is newer than the users', e.g. a tenant re-onboarded with its users kept)."""
    files = {}
    for database, number in (("passwd", "uid"), ("group", "gid")):
        names, ids = _host_names_and_ids(Path("/etc") / database)
        lines = []
        for fragment in fragments:
            own_ids = set()
            for entry in fragment[database]:
                if entry["name"] in names or entry[number] in ids or entry[number] < MIN_ID:
                    continue
                names.add(entry["name"])
                own_ids.add(entry[number])
                lines.append(
                    PasswdEntry(**entry).line()
                    if database == "passwd"
                    else GroupEntry(entry["name"], entry["gid"], tuple(entry["members"])).line()
                )
            ids |= own_ids
        files[database] = "".join(f"{line}\n" for line in lines)
    return files


def _merge(root: Path) -> None:
    fragments = []
    for path in _fragments_dir(root).glob("*.json"):
        data = json.loads(path.read_text())
        if proc_start_time(int(data["pid"])) != int(data["start_time"]):
            path.unlink(missing_ok=True)
            continue
        fragments.append(data)
    fragments.sort(key=lambda d: (int(d["start_time"]), str(d["state_dir"])))
    for database, text in _published(fragments).items():
        _write_if_changed(root / database, text)


def publish(state_dir: Path, users: list[PasswdEntry], groups: list[GroupEntry], root: Path = EXTRAUSERS_DIR) -> None:
    """Write this lab's extrausers files and make its entries part of the host's."""
    pid = os.getpid()
    fragment = {
        "state_dir": str(state_dir),
        "pid": pid,
        "start_time": proc_start_time(pid),
        "passwd": [asdict(u) for u in users],
        "group": [asdict(g) for g in groups],
    }
    nss = lab_nss_dir(state_dir)
    nss.mkdir(mode=0o755, parents=True, exist_ok=True)
    for database, own in _published([fragment]).items():
        _write_if_changed(nss / database, own)
    text = json.dumps(fragment, sort_keys=True)
    with _locked(root):
        _write_if_changed(_fragments_dir(root) / f"{_key(state_dir)}.json", text)
        _merge(root)


def withdraw(state_dir: Path, root: Path = EXTRAUSERS_DIR) -> None:
    """Remove this lab's entries from the host's extrausers files (its own files stay with its state)."""
    with _locked(root):
        (_fragments_dir(root) / f"{_key(state_dir)}.json").unlink(missing_ok=True)
        _merge(root)


def make_searchable(path: Path) -> None:
    """Add o+x to ``path`` and its parents: a job running as the user must reach its home and the lab's
    stand-in commands (a checkout below a 0700 home would otherwise hide them: ``nvidia-smi: Permission denied``)."""
    for folder in (path, *path.parents):
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def ensure_homes(state_dir: Path, users: list[PasswdEntry]) -> None:
    """Create each user's home below :func:`home_root` (0700, owned by the user), as Weka /home would hold it."""
    root = home_root(state_dir)
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    make_searchable(root)
    for user in users:
        home = Path(user.home)
        if home.parent != root or user.uid < MIN_ID:
            continue
        if not home.is_dir():
            home.mkdir(mode=0o700)
        info = home.stat()
        if (info.st_uid, info.st_gid) != (user.uid, user.gid):
            os.chown(home, user.uid, user.gid)


def sync_once(url: str, bind_dn: str, password: str, state_dir: Path, root: Path = EXTRAUSERS_DIR) -> None:
    users, groups = read_directory(url, bind_dn, password, state_dir)
    ensure_homes(state_dir, users)
    if pitfalls.is_on(state_dir, pitfalls.Pitfall.gid_mismatch):
        users = [replace(u, gid=u.gid + pitfalls.GID_DRIFT) for u in users]
        groups = [replace(g, gid=g.gid + pitfalls.GID_DRIFT) for g in groups]
    publish(state_dir, users, groups, root)


async def sync_loop(
    url: str, bind_dn: str, password: str, state_dir: Path, changes: Changes, interval_s: float = SYNC_INTERVAL_S
) -> None:
    """Sync until cancelled, then withdraw the lab's entries: at most once per ``interval_s`` while the lab changes
    (the Authentik stand-in writes the outpost's directory), on a backing-off resync period while it is idle
    (:func:`follow`). A failed sync keeps the last files (a down or restarting slapd, like nsscache); it is logged
    when it starts failing, when the reason changes and when it recovers."""
    ensure_nsswitch()
    failing: str | None = None

    async def step() -> None:
        nonlocal failing
        try:
            await asyncio.to_thread(sync_once, url, bind_dn, password, state_dir)
        except Exception as exc:
            if repr(exc) != failing:
                log.warning("host users: sync from %s failed, keeping the last files: %r", url, exc)
            failing = repr(exc)
        else:
            if failing is not None:
                log.warning("host users: sync from %s works again", url)
            failing = None

    try:
        await follow(changes, step, interval_s)
    finally:
        withdraw(state_dir)
