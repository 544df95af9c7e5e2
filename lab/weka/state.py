"""State of the Weka stand-in: organizations, users, filesystems, directories and directory quotas.

Capacity model (as in real Weka): the cluster has a provisionable capacity; each filesystem reserves
its ``total_capacity`` from it, so ``GET /cluster`` reports ``capacity.unprovisioned_bytes`` = total -
sum of filesystem budgets. An organization's ``total_quota`` (0 = unlimited) caps the budgets of its
filesystems. Directories exist only when seeded, made on a mount by the csi-wekafs stand-in
(:mod:`lab.controllers.csi`, with their uid, gid and mode) or by the tests' ``/_lab/mkdir`` hook: real Weka
creates them through a mount, never through the REST API. Each directory's owner is what the last chown/chmod
on a mount recorded (root:root 0755 until then), reported in the snapshot (``owners``), never derived from a
group's name. :meth:`ClusterState.dump` and :meth:`ClusterState.restore` carry the cluster across a restart.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

ROOT_ORG = "Root"
ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN, ROLE_CSI = "ClusterAdmin", "OrgAdmin", "CSI"
ROLE_REGULAR, ROLE_READ_ONLY = "Regular", "ReadOnly"
USER_ROLES = frozenset({ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN, ROLE_CSI, ROLE_REGULAR, ROLE_READ_ONLY})
ROOT_INODE = 1


@dataclass(frozen=True)
class Owner:
    """A directory's owner, group and permission bits, as ``stat`` on a mount shows them."""

    uid: int
    gid: int
    mode: int


class WekaError(Exception):
    """An API error: HTTP status and Weka's ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Organization:
    id: int
    name: str
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    ssd_quota: int = 0
    total_quota: int = 0


@dataclass
class WekaUser:
    username: str
    password: str
    org_id: int
    role: str
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class Quota:
    inode_id: int
    path: str
    hard_limit_bytes: int
    soft_limit_bytes: int
    grace_seconds: int
    owner: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "inode_id": self.inode_id,
            "path": self.path,
            "total_bytes": 0,
            "hard_limit_bytes": self.hard_limit_bytes,
            "soft_limit_bytes": self.soft_limit_bytes,
            "grace_seconds": self.grace_seconds,
            "owner": self.owner,
            "status": "ACTIVE",
        }


@dataclass
class FileSystem:
    id: int
    name: str
    group_name: str
    org_id: int
    total_capacity: int
    ssd_capacity: int
    used_bytes: int = 0
    encrypted: bool = False
    auth_required: bool = False
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    directories: dict[str, int] = field(default_factory=lambda: {"/": ROOT_INODE})
    quotas: dict[int, Quota] = field(default_factory=dict)
    owners: dict[str, list[int]] = field(default_factory=dict)
    """path -> [uid, gid, mode] as a mount's chown/chmod set them (absent: root, 0755)."""

    def as_dict(self) -> dict[str, Any]:
        free = self.total_capacity - self.used_bytes
        return {
            "uid": self.uid,
            "id": f"FSId<{self.id}>",
            "name": self.name,
            "group_name": self.group_name,
            "group_id": "FSGroupId<0>",
            "is_creating": False,
            "is_ready": True,
            "is_removing": False,
            "status": "READY",
            "is_encrypted": self.encrypted,
            "auth_required": self.auth_required,
            "total_budget": self.total_capacity,
            "ssd_budget": self.ssd_capacity,
            "metadata_budget": 0,
            "used_total": self.used_bytes,
            "used_total_data": self.used_bytes,
            "used_ssd": self.used_bytes,
            "used_ssd_data": self.used_bytes,
            "used_ssd_metadata": 0,
            "free_total": free,
            "available_total": free,
            "free_ssd": self.ssd_capacity - self.used_bytes,
            "available_ssd": self.ssd_capacity - self.used_bytes,
            "available_ssd_metadata": 0,
            "obs_buckets": [],
        }

    def mkdir(self, path: str) -> int:
        """Create ``path`` and its parents (like ``mkdir -p``); returns the inode id."""
        clean = normalise_path(path)
        if clean in self.directories:
            return self.directories[clean]
        parent = posixpath.dirname(clean)
        self.mkdir(parent)
        inode = max(self.directories.values()) + 1
        self.directories[clean] = inode
        return inode

    def remove_tree(self, path: str) -> bool:
        """``rm -rf`` on a mount: ``path`` and every directory under it go, with their owners and the quotas on
        their inodes (a directory quota lives on its inode); False when ``path`` did not exist."""
        clean = normalise_path(path)
        if clean == "/" or clean not in self.directories:
            return False
        gone = [p for p in self.directories if p == clean or p.startswith(f"{clean}/")]
        for gone_path in gone:
            self.quotas.pop(self.directories.pop(gone_path), None)
            self.owners.pop(gone_path, None)
        return True

    def set_owner(self, path: str, uid: int, gid: int, mode: int) -> None:
        """``chown uid:gid`` and ``chmod mode`` on an existing directory."""
        clean = normalise_path(path)
        if clean not in self.directories:
            raise WekaError(404, f"{clean}: No such file or directory")
        self.owners[clean] = [uid, gid, mode]

    def owner_of(self, path: str) -> Owner:
        """What a mount's ``stat`` shows: the last chown/chmod recorded, else root:root 0755 (``mkdir`` by root)."""
        return Owner(*self.owners.get(normalise_path(path), [0, 0, 0o755]))

    def owners_dict(self) -> dict[str, dict[str, int | str]]:
        """Every directory's owner as a mount shows it (``mode`` in octal, as ``stat -c %a``), by path."""
        owners = {path: self.owner_of(path) for path in sorted(self.directories)}
        return {path: {"uid": o.uid, "gid": o.gid, "mode": f"{o.mode:o}"} for path, o in owners.items()}

    def path_of(self, inode_id: int) -> str | None:
        return next((p for p, i in self.directories.items() if i == inode_id), None)


def normalise_path(path: str) -> str:
    if not path.startswith("/"):
        raise WekaError(400, f"Path must be absolute: {path}")
    return posixpath.normpath(path).replace("//", "/")


@dataclass
class ClusterState:
    """The whole emulated cluster."""

    name: str
    total_bytes: int
    orgs: dict[int, Organization] = field(default_factory=dict)
    users: list[WekaUser] = field(default_factory=list)
    filesystems: dict[str, FileSystem] = field(default_factory=dict)
    guid: str = field(default_factory=lambda: str(uuid.uuid4()))

    # -- organizations ---------------------------------------------------------------------------

    def org(self, uid: str) -> Organization:
        found = next((o for o in self.orgs.values() if o.uid == uid), None)
        if found is None:
            raise WekaError(404, f"Organization {uid} not found")
        return found

    def org_by_name(self, name: str) -> Organization | None:
        return next((o for o in self.orgs.values() if o.name == name), None)

    def org_allocated(self, org_id: int) -> tuple[int, int]:
        owned = [f for f in self.filesystems.values() if f.org_id == org_id]
        return sum(f.ssd_capacity for f in owned), sum(f.total_capacity for f in owned)

    def org_dict(self, org: Organization) -> dict[str, Any]:
        ssd_allocated, total_allocated = self.org_allocated(org.id)
        return {
            "uid": org.uid,
            "id": org.id,
            "name": org.name,
            "ssd_quota": org.ssd_quota,
            "total_quota": org.total_quota,
            "ssd_allocated": ssd_allocated,
            "total_allocated": total_allocated,
        }

    def create_org(self, name: str, username: str, password: str, ssd_quota: int, total_quota: int) -> Organization:
        if self.org_by_name(name) is not None:
            raise WekaError(409, f"Organization {name} already exists")
        if any(u.username == username for u in self.users):
            raise WekaError(409, f"User {username} already exists")
        org = Organization(id=max(self.orgs, default=-1) + 1, name=name, ssd_quota=ssd_quota, total_quota=total_quota)
        self.orgs[org.id] = org
        self.users.append(WekaUser(username=username, password=password, org_id=org.id, role=ROLE_ORG_ADMIN))
        return org

    def user_by_login(self, org_name: str, username: str, password: str) -> WekaUser | None:
        """The user a ``POST /login`` with these credentials would log in as."""
        org = self.org_by_name(org_name)
        return next(
            (
                u
                for u in self.users
                if org is not None and u.org_id == org.id and u.username == username and u.password == password
            ),
            None,
        )

    def create_user(self, org_id: int, username: str, password: str, role: str) -> WekaUser:
        if role not in USER_ROLES:
            raise WekaError(400, f"Unknown role {role}")
        if role == ROLE_CLUSTER_ADMIN and self.orgs[org_id].name != ROOT_ORG:
            raise WekaError(400, "ClusterAdmin users exist only in the Root organization")
        if any(u.username == username for u in self.users):
            raise WekaError(409, f"User {username} already exists")
        user = WekaUser(username=username, password=password, org_id=org_id, role=role)
        self.users.append(user)
        return user

    def set_org_limits(self, org: Organization, ssd_quota: int | None, total_quota: int | None) -> None:
        ssd_allocated, total_allocated = self.org_allocated(org.id)
        if total_quota is not None and 0 < total_quota < total_allocated:
            raise WekaError(400, f"Total quota {total_quota} is below the allocated {total_allocated}")
        if ssd_quota is not None and 0 < ssd_quota < ssd_allocated:
            raise WekaError(400, f"SSD quota {ssd_quota} is below the allocated {ssd_allocated}")
        if ssd_quota is not None:
            org.ssd_quota = ssd_quota
        if total_quota is not None:
            org.total_quota = total_quota

    def delete_org(self, org: Organization) -> None:
        if org.name == ROOT_ORG:
            raise WekaError(400, "The Root organization cannot be deleted")
        if any(f.org_id == org.id for f in self.filesystems.values()):
            raise WekaError(409, f"Organization {org.name} still owns filesystems")
        del self.orgs[org.id]
        self.users = [u for u in self.users if u.org_id != org.id]

    # -- capacity and filesystems ----------------------------------------------------------------

    def provisioned_bytes(self) -> int:
        return sum(f.total_capacity for f in self.filesystems.values())

    def cluster_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "guid": self.guid,
            "release": "4.4.0",
            "init_stage": "STABLE",
            "status": "OK",
            "io_status": "STARTED",
            "capacity": {
                "total_bytes": self.total_bytes,
                "hot_spare_bytes": 0,
                "unprovisioned_bytes": self.total_bytes - self.provisioned_bytes(),
            },
        }

    def filesystem(self, uid: str, org_id: int) -> FileSystem:
        found = self.filesystems.get(uid)
        if found is None or found.org_id != org_id:
            raise WekaError(404, f"Filesystem {uid} not found")
        return found

    def _check_budget(self, org_id: int, extra_total: int) -> None:
        if extra_total <= 0:
            return
        unprovisioned = self.total_bytes - self.provisioned_bytes()
        if extra_total > unprovisioned:
            raise WekaError(400, f"Not enough free capacity: requested {extra_total}, unprovisioned {unprovisioned}")
        org = self.orgs[org_id]
        _, allocated = self.org_allocated(org_id)
        if org.total_quota and allocated + extra_total > org.total_quota:
            raise WekaError(400, f"Organization {org.name} total quota {org.total_quota} exceeded")

    def create_filesystem(
        self,
        org_id: int,
        name: str,
        group_name: str,
        total_capacity: int,
        ssd_capacity: int | None,
        encrypted: bool,
        auth_required: bool,
    ) -> FileSystem:
        if any(f.name == name for f in self.filesystems.values()):
            raise WekaError(409, f"Filesystem {name} already exists")
        if total_capacity <= 0:
            raise WekaError(400, "total_capacity must be positive")
        self._check_budget(org_id, total_capacity)
        fs = FileSystem(
            id=max((f.id for f in self.filesystems.values()), default=-1) + 1,
            name=name,
            group_name=group_name,
            org_id=org_id,
            total_capacity=total_capacity,
            ssd_capacity=ssd_capacity if ssd_capacity is not None else total_capacity,
            encrypted=encrypted,
            auth_required=auth_required,
        )
        self.filesystems[fs.uid] = fs
        return fs

    def update_filesystem(
        self, fs: FileSystem, new_name: str | None, total_capacity: int | None, ssd_capacity: int | None
    ) -> None:
        if new_name is not None and new_name != fs.name:
            if any(f.name == new_name for f in self.filesystems.values()):
                raise WekaError(409, f"Filesystem {new_name} already exists")
            fs.name = new_name
        if total_capacity is not None:
            if total_capacity < fs.used_bytes:
                raise WekaError(400, "total_capacity is below the used capacity")
            self._check_budget(fs.org_id, total_capacity - fs.total_capacity)
            fs.total_capacity = total_capacity
        if ssd_capacity is not None:
            fs.ssd_capacity = ssd_capacity

    # -- snapshot --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Whole state in stable order, without generated ids or secrets."""

        def org_name(org_id: int) -> str:
            return self.orgs[org_id].name

        return {
            "cluster": {
                "total_bytes": self.total_bytes,
                "unprovisioned_bytes": self.total_bytes - self.provisioned_bytes(),
            },
            "organizations": sorted(
                ({"name": o.name, "ssd_quota": o.ssd_quota, "total_quota": o.total_quota} for o in self.orgs.values()),
                key=lambda o: str(o["name"]),
            ),
            "users": sorted(
                ({"org": org_name(u.org_id), "username": u.username, "role": u.role} for u in self.users),
                key=lambda u: (u["org"], u["username"]),
            ),
            "filesystems": sorted(
                (
                    {
                        "name": f.name,
                        "org": org_name(f.org_id),
                        "group_name": f.group_name,
                        "total_capacity": f.total_capacity,
                        "ssd_capacity": f.ssd_capacity,
                        "directories": sorted(f.directories),
                        "owners": f.owners_dict(),
                        "quotas": [
                            {k: v for k, v in q.as_dict().items() if k != "inode_id"}
                            for q in sorted(f.quotas.values(), key=lambda q: q.path)
                        ],
                    }
                    for f in self.filesystems.values()
                ),
                key=lambda f: str(f["name"]),
            ),
        }

    # -- persistence -----------------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """The whole cluster for :meth:`restore`, secrets included (the users' passwords)."""
        return {
            "name": self.name,
            "total_bytes": self.total_bytes,
            "guid": self.guid,
            "orgs": [asdict(o) for o in self.orgs.values()],
            "users": [asdict(u) for u in self.users],
            "filesystems": [
                {**asdict(f), "quotas": [asdict(q) for q in f.quotas.values()]} for f in self.filesystems.values()
            ],
        }

    @classmethod
    def restore(cls, dump: dict[str, Any]) -> ClusterState:
        cluster = cls(name=dump["name"], total_bytes=dump["total_bytes"], guid=dump["guid"])
        cluster.orgs = {raw["id"]: Organization(**raw) for raw in dump["orgs"]}
        cluster.users = [WekaUser(**raw) for raw in dump["users"]]
        for raw in dump["filesystems"]:
            quotas = [Quota(**q) for q in raw["quotas"]]
            fs = FileSystem(**{**raw, "quotas": {q.inode_id: q for q in quotas}})
            cluster.filesystems[fs.uid] = fs
        return cluster
