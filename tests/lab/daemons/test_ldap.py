"""The lab's slapd answers like the Authentik LDAP outpost: ldapsearch, ldap3, memberOf, ACLs."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from ldap3.core.exceptions import LDAPInsufficientAccessRightsResult, LDAPInvalidCredentialsResult

from tenantflow.lab.daemons import ldap_tree as tree
from tenantflow.lab.daemons.process import free_port, is_running, recorded, stop_all
from tenantflow.lab.daemons.slapd import SlapdHandle, start_slapd

pytestmark = pytest.mark.ldap


def ldapsearch(slapd: SlapdHandle, *args: str, bind: bool = True) -> subprocess.CompletedProcess[str]:
    auth = ["-D", slapd.bind_dn, "-w", slapd.bind_password] if bind else []
    return subprocess.run(
        ["ldapsearch", "-x", "-LLL", "-H", slapd.url, *auth, "-b", slapd.base_dn, *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


def test_ldapsearch_answers_like_the_runbook(slapd: SlapdHandle) -> None:
    with slapd.connect_admin() as conn:
        tree.upsert_user(conn, tree.LdapUser("alice", uid_number=2147, gid_number=4099, name="Alice R"))
        tree.upsert_group(conn, tree.LdapGroup("tenant-foo", gid_number=4099, members=("alice",)))
    result = ldapsearch(slapd, "(uid=alice)", "uid", "uidNumber", "gidNumber", "memberOf")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n\n")[0].splitlines() == [
        "dn: cn=alice,ou=users,dc=auth,dc=example,dc=internal",
        "uid: alice",
        "uidNumber: 2147",
        "gidNumber: 4099",
        "memberOf: cn=tenant-foo,ou=groups,dc=auth,dc=example,dc=internal",
    ]
    assert result.stdout.count("dn: ") == 1


def test_anonymous_search_is_refused(slapd: SlapdHandle) -> None:
    result = ldapsearch(slapd, "(objectClass=*)", bind=False)
    assert "dn: " not in result.stdout


def test_wrong_password_is_refused(slapd: SlapdHandle) -> None:
    with pytest.raises(LDAPInvalidCredentialsResult):
        tree.connect(slapd.url, slapd.bind_dn, "wrong")


def test_bind_user_reads_but_cannot_write(slapd: SlapdHandle) -> None:
    with slapd.connect_admin() as admin:
        tree.upsert_user(admin, tree.LdapUser("bob", uid_number=2148, gid_number=4099, email="bob@x.example"))
    with slapd.connect_bind() as conn:
        conn.search(tree.USERS_DN, "(sAMAccountName=bob)", attributes=["mail", "objectClass", "ak-active"])
        entry = conn.entries[0]
        assert entry.mail.value == "bob@x.example"
        assert {"inetOrgPerson", "posixAccount", "user"} <= set(entry.objectClass.values)
        assert entry["ak-active"].value == "TRUE"  # RFC 4517 Boolean, as sent (the lab reads no schema)
        with pytest.raises(LDAPInsufficientAccessRightsResult):
            tree.upsert_user(conn, tree.LdapUser("bob", uid_number=1, gid_number=1))


def test_memberof_follows_group_changes_and_user_deletion(slapd: SlapdHandle) -> None:
    group = tree.LdapGroup("tenant-bar", gid_number=4200, uid=str(uuid.uuid4()), members=("carol", "dave"))
    with slapd.connect_admin() as conn:
        for i, name in enumerate(("carol", "dave")):
            tree.upsert_user(conn, tree.LdapUser(name, uid_number=2200 + i, gid_number=4200))
        assert tree.upsert_group(conn, group) is True
        assert tree.member_of(conn, "carol") == [group.dn]
        assert tree.upsert_group(conn, tree.LdapGroup("tenant-bar", 4200, members=("dave",))) is False
        assert tree.member_of(conn, "carol") == []
        assert tree.delete_user(conn, "dave") is True
        conn.search(group.dn, "(objectClass=*)", attributes=["member"])
        assert conn.entries[0].member.values == []
        assert not tree.exists(conn, tree.virtual_group_dn("dave"))
        assert tree.delete_group(conn, "tenant-bar") is True
        assert tree.delete_group(conn, "tenant-bar") is False
        assert "tenant-bar" not in tree.list_group_names(conn)
        assert "carol" in tree.list_usernames(conn)


def test_outpost_number_rules() -> None:
    gid_uuid = "5f7ae6c4-3a0b-4e59-9d7c-6f0a4b5b1f42"
    assert tree.num_pk(gid_uuid) == int(str(uuid.UUID(gid_uuid).int)[:5])
    assert tree.group_gid_number(gid_uuid, {}) == 4000 + tree.num_pk(gid_uuid)
    assert tree.group_gid_number(gid_uuid, {"gidNumber": "4099"}) == 4099
    assert tree.group_gid_number(gid_uuid, {"gidNumber": 4099}) == 4000 + tree.num_pk(gid_uuid)
    assert tree.user_uid_number(147, {}) == 2147
    assert tree.user_gid_number(147, {}) == 2147
    assert tree.user_gid_number(147, {"gidNumber": "4099"}) == 4099


def test_stop_all_leaves_no_process(tmp_path: Path) -> None:
    handle = start_slapd(tmp_path, free_port())
    daemons = recorded(tmp_path)
    assert [d.pid for d in daemons] == [handle.daemon.pid]
    stop_all(tmp_path)
    assert not any(is_running(d) for d in daemons)
    assert recorded(tmp_path) == []
