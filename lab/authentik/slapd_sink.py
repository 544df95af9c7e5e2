"""The :class:`~lab.authentik.directory.DirectorySink` that writes the outpost projection into the lab's
real slapd through :mod:`lab.daemons.ldap_tree` (bound as slapd's rootdn).

Entries follow ``ldap_tree``'s shapes: ``uid`` is the username (what the runbook's ``(uid=alice)``
expects) rather than the outpost's hashed ``User.uid``; ``memberOf`` is maintained by slapd's memberof
overlay from the groups' ``member`` values; each user also gets its ``ou=virtual-groups`` entry.
One connection is kept and reopened after any error. Calls come from one thread at a time
(:class:`~lab.authentik.directory.DirectorySync` serialises them).
"""

from __future__ import annotations

from collections.abc import Callable

from ldap3 import Connection

from tenantflow.lab.authentik.directory import DirectoryGroup, DirectoryUser
from tenantflow.lab.daemons import ldap_tree


class SlapdSink:
    """Writes users and groups into slapd as the Authentik LDAP outpost would serve them."""

    def __init__(self, url: str, admin_dn: str, admin_password: str) -> None:
        self.url = url
        self.admin_dn = admin_dn
        self.admin_password = admin_password
        self._conn: Connection | None = None

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = ldap_tree.connect(self.url, self.admin_dn, self.admin_password)
        return self._conn

    def _run(self, action: Callable[[Connection], object]) -> None:
        try:
            action(self._connection())
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.unbind()
            self._conn = None

    def upsert_user(self, user: DirectoryUser, previous: DirectoryUser | None) -> None:
        entry, was = _ldap_user(user), _ldap_user(previous) if previous else None
        self._run(lambda conn: ldap_tree.update_user(conn, entry, was))

    def upsert_group(self, group: DirectoryGroup, previous: DirectoryGroup | None) -> None:
        entry, was = _ldap_group(group), _ldap_group(previous) if previous else None
        self._run(lambda conn: ldap_tree.update_group(conn, entry, was))

    def delete_user(self, username: str) -> None:
        self._run(lambda conn: ldap_tree.delete_user(conn, username))

    def delete_group(self, name: str) -> None:
        self._run(lambda conn: ldap_tree.delete_group(conn, name))


def _ldap_user(user: DirectoryUser) -> ldap_tree.LdapUser:
    return ldap_tree.LdapUser(
        username=user.username,
        uid_number=int(user.uid_number),
        gid_number=int(user.gid_number),
        name=user.name,
        email=user.email,
        is_active=user.active,
        is_superuser=user.superuser,
        ssh_public_keys=user.ssh_keys,
    )


def _ldap_group(group: DirectoryGroup) -> ldap_tree.LdapGroup:
    return ldap_tree.LdapGroup(
        name=group.name,
        gid_number=int(group.gid_number),
        uid=group.uid,
        members=group.members,
        is_superuser=group.superuser,
    )
