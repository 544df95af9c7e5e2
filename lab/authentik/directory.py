"""Project Authentik users and groups the way its LDAP outpost presents them, and push changes to a sink.

The projection follows ``internal/outpost/ldap`` (entries.go, group.go, utils.go) of Authentik:

* user ``uidNumber`` = ``attributes["uidNumber"]`` when it is a string, else ``uid_start_number + pk``;
* user ``gidNumber`` = ``attributes["gidNumber"]`` when it is a string, else the user's uidNumber;
* group ``gidNumber`` = ``attributes["gidNumber"]`` when it is a string, else ``gid_start_number + num_pk``;
* ``memberOf`` lists the DNs of the user's groups; ``homeDirectory`` is ``/home/<username>``.
* Inactive users stay in the tree: the outpost lists every user and marks them ``ak-active: FALSE``
  (binds for them fail in Authentik's flow, searches still return them).

:class:`DirectorySync` keeps the last projection it pushed and, after every API write, writes only the
entries that changed (renames become delete + upsert). A sink failure leaves the difference pending: the next
write (or :meth:`DirectorySync.resync`) retries it, and so does a retry every :data:`RETRY_S` seconds until a push
succeeds, like the outpost's periodic refresh (a restarted directory serves every change made while it was down).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

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

    def upsert_user(self, user: DirectoryUser) -> None: ...

    def upsert_group(self, group: DirectoryGroup) -> None: ...

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


def project(
    store: AuthentikStore, settings: LdapSettings
) -> tuple[dict[str, DirectoryUser], dict[str, DirectoryGroup]]:
    users = {u.username: project_user(store, u, settings) for u in store.users.values()}
    groups = {g.name: project_group(store, g, settings) for g in store.groups.values()}
    return users, groups


class DirectorySync:
    """Pushes the difference between the current projection and the last pushed one to a sink."""

    def __init__(self, store: AuthentikStore, settings: LdapSettings, sink: DirectorySink) -> None:
        self.store = store
        self.settings = settings
        self.sink = sink
        self._users: dict[str, DirectoryUser] = {}
        self._groups: dict[str, DirectoryGroup] = {}
        self._lock = asyncio.Lock()
        self._requested = 0
        """Sync requests so far; each comes after its API write reached the store."""
        self._covered = 0
        """Requests whose writes a successful push included."""
        self._retry: asyncio.Task[None] | None = None

    async def sync(self) -> None:
        """Write what changed since the last successful push (serialised; runs ldap3 in a thread). Writes that
        queued behind a push are covered by the next one, as the outpost's refresh covers every change since
        its last: concurrent API writes then cost one projection, not one each."""
        self._requested += 1
        wanted = self._requested
        async with self._lock:
            if self._covered >= wanted:
                return
            covering = self._requested
            users, groups = project(self.store, self.settings)
            try:
                await asyncio.to_thread(self._push, users, groups)
            except Exception:
                log.exception("LDAP outpost sync failed; retrying every %s s and on the next change", RETRY_S)
                if self._retry is None or self._retry.done():
                    self._retry = asyncio.get_running_loop().create_task(self._retry_until_pushed())
            else:
                self._covered = covering

    async def _retry_until_pushed(self) -> None:
        while self._covered < self._requested:
            await asyncio.sleep(RETRY_S)
            await self.sync()

    async def resync(self) -> None:
        """Forget what was pushed and write every entry again."""
        async with self._lock:
            self._users, self._groups = {}, {}
        await self.sync()

    def _push(self, users: dict[str, DirectoryUser], groups: dict[str, DirectoryGroup]) -> None:
        for name, entry in sorted(users.items()):
            if self._users.get(name) != entry:
                self.sink.upsert_user(entry)
                self._users[name] = entry
        for name, group in sorted(groups.items()):
            if self._groups.get(name) != group:
                self.sink.upsert_group(group)
                self._groups[name] = group
        for name in sorted(set(self._groups) - set(groups)):
            self.sink.delete_group(name)
            del self._groups[name]
        for name in sorted(set(self._users) - set(users)):
            self.sink.delete_user(name)
            del self._users[name]
