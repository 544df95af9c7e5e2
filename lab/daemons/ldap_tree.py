"""Write the Authentik LDAP outpost's directory tree into the lab's slapd, with ldap3.

The lab's Authentik→LDAP sync calls these helpers (bound as the slapd rootdn) so that the real
slapd serves what the Authentik LDAP outpost would serve. Entry shapes (base ``dc=auth,dc=example,
dc=internal``; the outpost's own source is ``internal/outpost/ldap/entries.go`` and ``group/group.go``):

Containers: ``ou=users``, ``ou=groups``, ``ou=virtual-groups`` (objectClass top, organizationalUnit).

User ``cn=<username>,ou=users,<base>``
    objectClass: top, person, organizationalPerson, inetOrgPerson, posixAccount, user,
    goauthentikio-ldap-user; attributes cn=<username>, uid (see below), sAMAccountName=<username>,
    name, displayName and sn = the full name (username when empty), mail (omitted when empty),
    uidNumber, gidNumber, homeDirectory=/home/<username>, ak-active, ak-superuser (TRUE/FALSE),
    sshPublicKey (one value per key, optional), userPassword (optional), and the operational
    ``memberOf`` = DNs of the groups listing the user in ``member``, maintained by the memberof overlay.

Group ``cn=<name>,ou=groups,<base>``
    objectClass: top, posixGroup, group, goauthentikio-ldap-group; attributes cn=<name>,
    sAMAccountName=<name>, uid=<group pk UUID>, gidNumber, ak-superuser, member = user DNs.

Virtual group ``cn=<username>,ou=virtual-groups,<base>`` (one per user, written by :func:`upsert_user`)
    objectClass: top, posixGroup, goauthentikio-ldap-virtual-group; cn and sAMAccountName=<username>,
    gidNumber = the user's gidNumber, member = the user's DN. It is not of class ``group``, so it does
    not appear in the user's memberOf (the outpost lists only real groups there), and it has no
    ``uid`` (the outpost copies the user's), so ``(uid=alice)`` finds exactly one entry as in the runbook.

Numbers (provider fields ``uid_start_number`` 2000 and ``gid_start_number`` 4000, see
:func:`user_uid_number`, :func:`user_gid_number`, :func:`group_gid_number`): a user's uidNumber is
``attributes["uidNumber"]`` when it is a string, else 2000 + user pk; its gidNumber is
``attributes["gidNumber"]`` when a string, else its uidNumber; a group's gidNumber is
``attributes["gidNumber"]`` when a string, else 4000 + num_pk.

Differences from the outpost, forced by OpenLDAP's schema rules: ``user`` and ``group`` are auxiliary
classes here; groups lack groupOfNames/groupOfUniqueNames (a second structural class); the marker
classes ``goauthentik.io/ldap/*`` are spelled ``goauthentikio-ldap-*`` ('.' and '/' are not legal in
LDAP names); arbitrary Authentik attributes are not copied. The outpost's ``uid`` is Authentik's
``User.uid``; the runbook expects ``uid: alice``, so :class:`LdapUser` defaults ``uid`` to the username.
"""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ldap3 import BASE, LEVEL, MODIFY_ADD, MODIFY_DELETE, MODIFY_REPLACE, NONE, Connection, Server
from ldap3.core.exceptions import (
    LDAPAttributeOrValueExistsResult,
    LDAPEntryAlreadyExistsResult,
    LDAPNoSuchAttributeResult,
    LDAPNoSuchObjectResult,
)

BASE_DN = "dc=auth,dc=example,dc=internal"
USERS_DN = f"ou=users,{BASE_DN}"
GROUPS_DN = f"ou=groups,{BASE_DN}"
VIRTUAL_GROUPS_DN = f"ou=virtual-groups,{BASE_DN}"
BIND_USERNAME = "ldap-bind"
UID_START_NUMBER = 2000
GID_START_NUMBER = 4000

USER_OBJECT_CLASSES = [
    "top",
    "person",
    "organizationalPerson",
    "inetOrgPerson",
    "posixAccount",
    "user",
    "goauthentikio-ldap-user",
]
GROUP_OBJECT_CLASSES = ["top", "posixGroup", "group", "goauthentikio-ldap-group"]
VIRTUAL_GROUP_OBJECT_CLASSES = ["top", "posixGroup", "goauthentikio-ldap-virtual-group"]


@dataclass(frozen=True)
class LdapUser:
    """An Authentik user as the outpost serves it."""

    username: str
    uid_number: int
    gid_number: int
    name: str = ""
    email: str = ""
    uid: str = ""
    is_active: bool = True
    is_superuser: bool = False
    ssh_public_keys: tuple[str, ...] = ()
    password: str | None = None

    @property
    def dn(self) -> str:
        return user_dn(self.username)


@dataclass(frozen=True)
class LdapGroup:
    """An Authentik group as the outpost serves it; ``members`` are usernames."""

    name: str
    gid_number: int
    uid: str = ""
    members: tuple[str, ...] = field(default_factory=tuple)
    is_superuser: bool = False

    @property
    def dn(self) -> str:
        return group_dn(self.name)


def user_dn(username: str) -> str:
    return f"cn={username},{USERS_DN}"


def group_dn(name: str) -> str:
    return f"cn={name},{GROUPS_DN}"


def virtual_group_dn(username: str) -> str:
    return f"cn={username},{VIRTUAL_GROUPS_DN}"


def num_pk(group_uuid: str) -> int:
    """Authentik's ``Group.num_pk``: the first five decimal digits of the UUID's integer value."""
    return int(str(uuid.UUID(group_uuid).int)[:5])


def user_uid_number(pk: int, attributes: Mapping[str, Any], uid_start: int = UID_START_NUMBER) -> int:
    value = attributes.get("uidNumber")
    return int(value) if isinstance(value, str) else uid_start + pk


def user_gid_number(pk: int, attributes: Mapping[str, Any], uid_start: int = UID_START_NUMBER) -> int:
    value = attributes.get("gidNumber")
    return int(value) if isinstance(value, str) else user_uid_number(pk, attributes, uid_start)


def group_gid_number(group_uuid: str, attributes: Mapping[str, Any], gid_start: int = GID_START_NUMBER) -> int:
    value = attributes.get("gidNumber")
    return int(value) if isinstance(value, str) else gid_start + num_pk(group_uuid)


def ssha(password: str) -> str:
    """An OpenLDAP ``{SSHA}`` userPassword value."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def _bool(value: bool) -> str:
    return "TRUE" if value else "FALSE"


def user_attributes(user: LdapUser) -> dict[str, list[str]]:
    """Every attribute the user entry should carry; empty lists mean "absent"."""
    full_name = user.name or user.username
    return {
        "objectClass": USER_OBJECT_CLASSES,
        "cn": [user.username],
        "uid": [user.uid or user.username],
        "sAMAccountName": [user.username],
        "name": [full_name],
        "displayName": [full_name],
        "sn": [full_name],
        "mail": [user.email] if user.email else [],
        "uidNumber": [str(user.uid_number)],
        "gidNumber": [str(user.gid_number)],
        "homeDirectory": [f"/home/{user.username}"],
        "ak-active": [_bool(user.is_active)],
        "ak-superuser": [_bool(user.is_superuser)],
        "sshPublicKey": list(user.ssh_public_keys),
    }


def virtual_group_attributes(user: LdapUser) -> dict[str, list[str]]:
    return {
        "objectClass": VIRTUAL_GROUP_OBJECT_CLASSES,
        "cn": [user.username],
        "sAMAccountName": [user.username],
        "gidNumber": [str(user.gid_number)],
        "ak-superuser": [_bool(False)],
        "member": [user.dn],
    }


def group_attributes(group: LdapGroup) -> dict[str, list[str]]:
    return {
        "objectClass": GROUP_OBJECT_CLASSES,
        "cn": [group.name],
        "sAMAccountName": [group.name],
        "uid": [group.uid] if group.uid else [],
        "gidNumber": [str(group.gid_number)],
        "ak-superuser": [_bool(group.is_superuser)],
        "member": sorted({user_dn(name) for name in group.members}),
    }


def connect(url: str, bind_dn: str, password: str) -> Connection:
    """A bound, synchronous ldap3 connection that raises on every LDAP error. Without the server's schema
    (``get_info=NONE``): reading and parsing it after each bind cost more than the host-user syncs it served, so
    values come back as the strings slapd sent."""
    return Connection(
        Server(url, get_info=NONE, connect_timeout=5),
        user=bind_dn,
        password=password,
        auto_bind=True,
        raise_exceptions=True,
        receive_timeout=10,
    )


def exists(conn: Connection, dn: str) -> bool:
    try:
        return bool(conn.search(dn, "(objectClass=*)", search_scope=BASE, attributes=["1.1"]))
    except LDAPNoSuchObjectResult:
        return False


def upsert(conn: Connection, dn: str, attributes: Mapping[str, list[str]]) -> bool:
    """Create the entry or, when it exists (slapd answers entryAlreadyExists), replace the given attributes;
    return True when it was created. One round trip for a new entry, two for an existing one."""
    try:
        conn.add(dn, attributes={name: values for name, values in attributes.items() if values})
    except LDAPEntryAlreadyExistsResult:
        conn.modify(dn, {name: [(MODIFY_REPLACE, values)] for name, values in attributes.items()})
        return False
    return True


def changes(previous: Mapping[str, list[str]], wanted: Mapping[str, list[str]]) -> dict[str, list[Any]]:
    """The modify operations turning the entry written as ``previous`` into ``wanted``: a changed attribute is
    replaced, except ``member``, whose values are added and deleted one by one (a replace of a big group's
    ``member`` makes the memberof overlay rewrite every member's ``memberOf``)."""
    result: dict[str, list[Any]] = {}
    for name, values in wanted.items():
        before = previous.get(name, [])
        if sorted(before) == sorted(values):
            continue
        if name != "member":
            result[name] = [(MODIFY_REPLACE, values)]
            continue
        added, removed = sorted(set(values) - set(before)), sorted(set(before) - set(values))
        result[name] = [(MODIFY_ADD, added)] * bool(added) + [(MODIFY_DELETE, removed)] * bool(removed)
    return result


def update(
    conn: Connection, dn: str, previous: Mapping[str, list[str]] | None, wanted: Mapping[str, list[str]]
) -> None:
    """Write only what differs from ``previous`` (the entry as last written; None: unknown). When the entry is not
    as last written (gone, or a member already added or removed), write it whole with :func:`upsert`."""
    if previous is None:
        upsert(conn, dn, wanted)
        return
    modify = changes(previous, wanted)
    if not modify:
        return
    try:
        conn.modify(dn, modify)
    except (LDAPNoSuchObjectResult, LDAPAttributeOrValueExistsResult, LDAPNoSuchAttributeResult):
        upsert(conn, dn, wanted)


def delete(conn: Connection, dn: str) -> bool:
    """Delete the entry; return False when it did not exist."""
    try:
        conn.delete(dn)
    except LDAPNoSuchObjectResult:
        return False
    return True


def ensure_tree(conn: Connection) -> None:
    """The base entry and the three containers."""
    upsert(conn, BASE_DN, {"objectClass": ["top", "dcObject", "organization"], "dc": ["auth"], "o": ["auth"]})
    for dn in (USERS_DN, GROUPS_DN, VIRTUAL_GROUPS_DN):
        ou = dn.split(",", 1)[0].split("=", 1)[1]
        upsert(conn, dn, {"objectClass": ["top", "organizationalUnit"], "ou": [ou]})


def upsert_user(conn: Connection, user: LdapUser) -> bool:
    """Write the user entry and its virtual group; return True when the user was created."""
    attributes = user_attributes(user)
    if user.password is not None:
        attributes["userPassword"] = [ssha(user.password)]
    created = upsert(conn, user.dn, attributes)
    upsert(conn, virtual_group_dn(user.username), virtual_group_attributes(user))
    return created


def update_user(conn: Connection, user: LdapUser, previous: LdapUser | None) -> None:
    """Write the user entry and its virtual group as :func:`update` does (no password: the outpost has none)."""
    update(conn, user.dn, user_attributes(previous) if previous else None, user_attributes(user))
    was = virtual_group_attributes(previous) if previous else None
    update(conn, virtual_group_dn(user.username), was, virtual_group_attributes(user))


def delete_user(conn: Connection, username: str) -> bool:
    """Delete the user and its virtual group; the memberof overlay drops it from groups' ``member``."""
    delete(conn, virtual_group_dn(username))
    return delete(conn, user_dn(username))


def upsert_group(conn: Connection, group: LdapGroup) -> bool:
    """Write the group with exactly ``group.members``; return True when it was created."""
    return upsert(conn, group.dn, group_attributes(group))


def update_group(conn: Connection, group: LdapGroup, previous: LdapGroup | None) -> None:
    """Write the group as :func:`update` does: members added and removed value by value."""
    update(conn, group.dn, group_attributes(previous) if previous else None, group_attributes(group))


def delete_group(conn: Connection, name: str) -> bool:
    return delete(conn, group_dn(name))


def _names(conn: Connection, container: str, object_class: str) -> list[str]:
    conn.search(container, f"(objectClass={object_class})", search_scope=LEVEL, attributes=["cn"])
    return sorted(str(entry.cn.value) for entry in conn.entries)


def list_usernames(conn: Connection) -> list[str]:
    """Usernames under ``ou=users`` (including the bind user)."""
    return _names(conn, USERS_DN, "user")


def list_group_names(conn: Connection) -> list[str]:
    return _names(conn, GROUPS_DN, "group")


def member_of(conn: Connection, username: str) -> list[str]:
    """The user's memberOf values, as the overlay maintains them."""
    conn.search(user_dn(username), "(objectClass=*)", search_scope=BASE, attributes=["memberOf"])
    return sorted(str(value) for value in conn.entries[0].memberOf.values) if conn.entries else []
