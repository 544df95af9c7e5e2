"""Project Authentik users and groups the way its LDAP outpost presents them, and push changes to a sink.

The projection follows ``internal/outpost/ldap`` (entries.go, group.go, utils.go) of Authentik:

* user ``uidNumber`` = ``attributes["uidNumber"]`` when it is a string, else ``uid_start_number + pk``;
* user ``gidNumber`` = ``attributes["gidNumber"]`` when it is a string, else the user's uidNumber;
* group ``gidNumber`` = ``attributes["gidNumber"]`` when it is a string, else ``gid_start_number + num_pk``;
* ``memberOf`` lists the DNs of the user's groups; ``homeDirectory`` is ``/home/<username>``.
* Inactive users stay in the tree: the outpost lists every user and marks them ``ak-active: FALSE``
  (binds for them fail in Authentik's flow, searches still return them).

:class:`DirectorySync` keeps the last projection it pushed and, after every API write, projects only the
users and groups the write touched (the store notes them) and writes only the entries that changed, each as
its difference from the last write (renames become delete + upsert). The real outpost computes entries per
search from the API, so its cost does not grow with the directory on a write; a full re-projection per write
made the lab's cost per user grow with the number of users. A sink failure leaves the difference pending: the
next write (or :meth:`DirectorySync.resync`) retries it, and so does a retry every :data:`RETRY_S` seconds until
a push succeeds, like the outpost's periodic refresh (a restarted directory serves every change made while it
was down).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from tenantflow.lab.authentik.store import AuthentikStore, Group, User

log = logging.getLogger(__name__)
RETRY_S = 1.0


@dataclass(frozen=True)
class LdapSettings:
    """The LDAP provider fields the outpost's numbering depends on."""

    base_dn: str
    uid_start_number: int = 2000
    gid_start_number: int = 4000


@dataclass(frozen=True)
class DirectoryUser:
    """One user entry as the outpost serves it (``cn=<username>,ou=users,<base>``)."""

    username: str
    name: str
    email: str
    uid: str
    uid_number: str
    gid_number: str
    home_directory: str
    active: bool
    superuser: bool
    member_of: tuple[str, ...]
    ssh_keys: tuple[str, ...]


@dataclass(frozen=True)
class DirectoryGroup:
    """One group entry as the outpost serves it (``cn=<name>,ou=groups,<base>``)."""

    name: str
    uid: str
    gid_number: str
    members: tuple[str, ...]
    superuser: bool


class DirectorySink(Protocol):
    """Where the projection is written (the lab's slapd tree)."""

    def upsert_user(self, user: DirectoryUser, previous: DirectoryUser | None) -> None:
        """Write ``user``; ``previous`` is the entry last written under its DN (None: unknown, write it all)."""

    def upsert_group(self, group: DirectoryGroup, previous: DirectoryGroup | None) -> None:
        """Write ``group``; ``previous`` as for :meth:`upsert_user` (members then change value by value)."""

    def delete_user(self, username: str) -> None: ...

    def delete_group(self, name: str) -> None: ...


def _string_attribute(attributes: dict[str, Any], key: str) -> str | None:
    value = attributes.get(key)
    return value if isinstance(value, str) else None


def uid_number(user: User, settings: LdapSettings) -> str:
    return _string_attribute(user.attributes, "uidNumber") or str(settings.uid_start_number + user.pk)


def user_gid_number(user: User, settings: LdapSettings) -> str:
    return _string_attribute(user.attributes, "gidNumber") or uid_number(user, settings)


def group_gid_number(group: Group, settings: LdapSettings) -> str:
    return _string_attribute(group.attributes, "gidNumber") or str(settings.gid_start_number + group.num_pk)


def _ssh_keys(attributes: dict[str, Any]) -> tuple[str, ...]:
    raw = attributes.get("ssh_keys")
    lines: list[str] = []
    for chunk in raw if isinstance(raw, list) else [raw]:
        if isinstance(chunk, str):
            lines.extend(line.strip() for line in chunk.splitlines() if line.strip())
    return tuple(lines)


def group_dn(name: str, settings: LdapSettings) -> str:
    return f"cn={name},ou=groups,{settings.base_dn}"


def user_dn(username: str, settings: LdapSettings) -> str:
    return f"cn={username},ou=users,{settings.base_dn}"


def project_user(store: AuthentikStore, user: User, settings: LdapSettings) -> DirectoryUser:
    return DirectoryUser(
        username=user.username,
        name=user.name,
        email=user.email,
        uid=store.user_uid(user),
        uid_number=uid_number(user, settings),
        gid_number=user_gid_number(user, settings),
        home_directory=f"/home/{user.username}",
        active=user.is_active,
        superuser=store.is_superuser(user),
        member_of=tuple(group_dn(g.name, settings) for g in store.groups_of(user.pk)),
        ssh_keys=_ssh_keys(user.attributes),
    )


def project_group(store: AuthentikStore, group: Group, settings: LdapSettings) -> DirectoryGroup:
    return DirectoryGroup(
        name=group.name,
        uid=group.pk,
        gid_number=group_gid_number(group, settings),
        members=tuple(sorted(store.users[pk].username for pk in group.users)),
        superuser=group.is_superuser,
    )


E = TypeVar("E", DirectoryUser, DirectoryGroup)
K = TypeVar("K", int, str)


class _Pushed(Generic[K, E]):
    """What was pushed of one kind (users or groups), by entry name, and what is still to reconsider."""

    def __init__(self) -> None:
        self.entries: dict[str, E] = {}
        """The entry last written under each name."""
        self.names: dict[K, str] = {}
        """The name each record (by pk) was last projected under."""
        self.pending: set[K] = set()
        self.pending_names: set[str] = set()

    def changes(self, touched: set[K], current: dict[K, E]) -> tuple[dict[str, E], set[str]]:
        """The wanted entries of the touched records (``current``: those still in the store, projected) and every
        name to reconsider: theirs now, the ones they were pushed under, and those of an earlier failed push."""
        self.pending |= touched
        wanted = {entry_name(entry): entry for entry in current.values()}
        self.pending_names |= set(wanted) | {self.names[pk] for pk in self.pending if pk in self.names}
        for pk in self.pending:
            if pk in current:
                self.names[pk] = entry_name(current[pk])
            else:
                self.names.pop(pk, None)
        return wanted, set(self.pending_names)

    def done(self) -> None:
        self.pending, self.pending_names = set(), set()

    def forget(self, every: set[K]) -> None:
        """Treat nothing as pushed and every record as touched (a full push)."""
        self.entries, self.names = {}, {}
        self.pending |= every


def entry_name(entry: DirectoryUser | DirectoryGroup) -> str:
    return entry.username if isinstance(entry, DirectoryUser) else entry.name


class DirectorySync:
    """Pushes the entries of the users and groups that changed since the last push to a sink, each as the
    difference from what was last written under its name."""

    def __init__(self, store: AuthentikStore, settings: LdapSettings, sink: DirectorySink) -> None:
        self.store = store
        self.settings = settings
        self.sink = sink
        self._users: _Pushed[int, DirectoryUser] = _Pushed()
        self._groups: _Pushed[str, DirectoryGroup] = _Pushed()
        self._lock = asyncio.Lock()
        self._requested = 0
        """Sync requests so far; each comes after its API write reached the store."""
        self._covered = 0
        """Requests whose writes a successful push included."""
        self._retry: asyncio.Task[None] | None = None

    async def sync(self) -> None:
        """Write what changed since the last successful push (serialised; runs ldap3 in a thread). Writes that
        queued behind a push are covered by the next one, as the outpost's refresh covers every change since
        its last: concurrent API writes then cost one push, and each push projects only the users and groups
        the writes touched (:meth:`AuthentikStore.take_touched`), not the whole directory."""
        self._requested += 1
        wanted = self._requested
        async with self._lock:
            if self._covered >= wanted:
                return
            covering = self._requested
            users, groups = self._changes()
            try:
                await asyncio.to_thread(self._push, users, groups)
            except Exception:
                log.exception("LDAP outpost sync failed; retrying every %s s and on the next change", RETRY_S)
                if self._retry is None or self._retry.done():
                    self._retry = asyncio.get_running_loop().create_task(self._retry_until_pushed())
            else:
                self._users.done()
                self._groups.done()
                self._covered = covering

    async def _retry_until_pushed(self) -> None:
        while self._covered < self._requested:
            await asyncio.sleep(RETRY_S)
            await self.sync()

    async def resync(self) -> None:
        """Forget what was pushed and write every entry again."""
        async with self._lock:
            self._users.forget(set(self.store.users))
            self._groups.forget(set(self.store.groups))
        await self.sync()

    def _changes(self) -> tuple[tuple[dict[str, DirectoryUser], set[str]], tuple[dict[str, DirectoryGroup], set[str]]]:
        """Project the touched users and groups (in the event loop, where the store is consistent)."""
        touched_users, touched_groups = self.store.take_touched()
        store, settings = self.store, self.settings
        users = {
            pk: project_user(store, store.users[pk], settings)
            for pk in touched_users | self._users.pending
            if pk in store.users
        }
        groups = {
            pk: project_group(store, store.groups[pk], settings)
            for pk in touched_groups | self._groups.pending
            if pk in store.groups
        }
        return self._users.changes(touched_users, users), self._groups.changes(touched_groups, groups)

    def _push(
        self, users: tuple[dict[str, DirectoryUser], set[str]], groups: tuple[dict[str, DirectoryGroup], set[str]]
    ) -> None:
        (wanted_users, user_names), (wanted_groups, group_names) = users, groups
        for name in sorted(user_names):
            user = wanted_users.get(name)
            if user is not None and self._users.entries.get(name) != user:
                self.sink.upsert_user(user, self._users.entries.get(name))
                self._users.entries[name] = user
        for name in sorted(group_names):
            group = wanted_groups.get(name)
            if group is not None and self._groups.entries.get(name) != group:
                self.sink.upsert_group(group, self._groups.entries.get(name))
                self._groups.entries[name] = group
        for name in sorted(group_names - set(wanted_groups)):
            if name in self._groups.entries:
                self.sink.delete_group(name)
                del self._groups.entries[name]
        for name in sorted(user_names - set(wanted_users)):
            if name in self._users.entries:
                self.sink.delete_user(name)
                del self._users.entries[name]
