"""Authentik writes reach the real slapd as the LDAP outpost would serve them; checked with ldapsearch."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from authentik_harness import AuthentikLab
from ldap3 import MODIFY_DELETE

from tenantflow.lab.authentik.slapd_sink import SlapdSink
from tenantflow.lab.daemons import ldap_tree
from tenantflow.lab.daemons.process import free_port, stop_all
from tenantflow.lab.daemons.slapd import SlapdHandle, start_slapd

pytestmark = pytest.mark.ldap
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"


@pytest.fixture(scope="module")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlapdHandle]:
    if os.geteuid() != 0 or shutil.which("slapd") is None or shutil.which("ldapsearch") is None:
        pytest.skip("needs root, slapd and ldapsearch")
    state_dir: Path = tmp_path_factory.mktemp("authentik-ldap")
    handle = start_slapd(state_dir, free_port())
    yield handle
    stop_all(state_dir)


@pytest.fixture
def directory_sink(slapd: SlapdHandle) -> Iterator[SlapdSink]:
    sink = SlapdSink(slapd.url, slapd.admin_dn, slapd.admin_password)
    yield sink
    sink.close()


def ldapsearch(slapd: SlapdHandle, search: str, *attributes: str) -> dict[str, list[str]]:
    """Run the runbook's ldapsearch as the bind user; one entry's attributes (empty when none)."""
    out = subprocess.run(
        [
            "ldapsearch",
            "-x",
            "-LLL",
            "-o",
            "ldif-wrap=no",
            "-H",
            slapd.url,
            "-D",
            slapd.bind_dn,
            "-w",
            slapd.bind_password,
            "-b",
            slapd.base_dn,
            search,
            *attributes,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    entry: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            entry.setdefault(key, []).append(value)
    return entry


async def test_user_resolves_through_ldap(authentik: AuthentikLab, slapd: SlapdHandle) -> None:
    client = authentik.client
    tenants = (await client.post("/core/groups/", json={"name": "tenants"})).json()
    group = (
        await client.post(
            "/core/groups/",
            json={
                "name": "tenant-foo",
                "parents": [tenants["pk"]],
                "attributes": {"tenant_slug": "tenant-foo", "gidNumber": "4099"},
            },
        )
    ).json()
    alice = (
        await client.post(
            "/core/users/",
            json={
                "username": "alice",
                "name": "Alice Researcher",
                "email": "alice@tenant-foo.example",
                "groups": [group["pk"]],
                "attributes": {"ssh_keys": SSH_KEY, "gidNumber": "4099"},
            },
        )
    ).json()
    bob = (await client.post("/core/users/", json={"username": "bob", "name": "Bob"})).json()
    added = await client.post(f"/core/groups/{group['pk']}/add_user/", json={"pk": bob["pk"]})
    assert added.status_code == 204

    entry = ldapsearch(slapd, "(uid=alice)", "uid", "uidNumber", "gidNumber", "memberOf", "ak-active")
    assert entry["dn"] == [f"cn=alice,ou=users,{slapd.base_dn}"]
    assert entry["uidNumber"] == [str(2000 + alice["pk"])]
    assert entry["gidNumber"] == ["4099"]
    assert entry["memberOf"] == [f"cn=tenant-foo,ou=groups,{slapd.base_dn}"]
    bob_entry = ldapsearch(slapd, "(uid=bob)", "uidNumber", "gidNumber")
    assert bob_entry["gidNumber"] == bob_entry["uidNumber"] == [str(2000 + bob["pk"])]
    tenants_entry = ldapsearch(slapd, "(&(objectClass=posixGroup)(cn=tenants))", "gidNumber")
    assert tenants_entry["gidNumber"] == [str(4000 + tenants["num_pk"])]
    group_entry = ldapsearch(slapd, "(&(objectClass=posixGroup)(cn=tenant-foo))", "gidNumber", "member")
    assert group_entry["gidNumber"] == ["4099"]
    assert sorted(group_entry["member"]) == [f"cn={u},ou=users,{slapd.base_dn}" for u in ("alice", "bob")]

    await client.patch(f"/core/users/{alice['pk']}/", json={"is_active": False})
    await client.post(f"/core/groups/{group['pk']}/remove_user/", json={"pk": alice["pk"]})
    entry = ldapsearch(slapd, "(uid=alice)", "memberOf", "ak-active")
    assert entry["ak-active"] == ["FALSE"] and "memberOf" not in entry

    await client.delete(f"/core/users/{bob['pk']}/")
    await client.delete(f"/core/groups/{group['pk']}/")
    await client.delete(f"/core/users/{alice['pk']}/")
    await client.delete(f"/core/groups/{tenants['pk']}/")
    assert ldapsearch(slapd, "(uid=bob)") == {}
    assert ldapsearch(slapd, "(cn=tenant-foo)") == {}
    assert ldapsearch(slapd, "(uid=ldap-bind)", "uidNumber")["uidNumber"] == ["2001"]


async def test_group_members_change_one_by_one_and_a_hand_edit_is_overwritten(
    authentik: AuthentikLab, slapd: SlapdHandle
) -> None:
    """Member changes reach slapd value by value; when the entry is not as last written (a member removed by
    hand), the group is written whole, so slapd ends as Authentik says."""
    client = authentik.client
    group = (await client.post("/core/groups/", json={"name": "tenant-big"})).json()
    pks = {}
    for name in ("amy", "ben", "cat"):
        pks[name] = (
            await client.post("/core/users/", json={"username": name, "name": name, "groups": [group["pk"]]})
        ).json()["pk"]
    conn = ldap_tree.connect(slapd.url, slapd.admin_dn, slapd.admin_password)
    try:
        conn.modify(ldap_tree.group_dn("tenant-big"), {"member": [(MODIFY_DELETE, [ldap_tree.user_dn("ben")])]})
    finally:
        conn.unbind()
    await client.post(f"/core/groups/{group['pk']}/remove_user/", json={"pk": pks["ben"]})
    await client.post("/core/users/", json={"username": "dan", "name": "dan", "groups": [group["pk"]]})
    await client.post(f"/core/groups/{group['pk']}/remove_user/", json={"pk": pks["amy"]})

    members = ldapsearch(slapd, "(&(objectClass=posixGroup)(cn=tenant-big))", "member")["member"]
    assert sorted(members) == [ldap_tree.user_dn(u) for u in ("cat", "dan")]
    assert ldapsearch(slapd, "(uid=dan)", "memberOf")["memberOf"] == [ldap_tree.group_dn("tenant-big")]
    assert "memberOf" not in ldapsearch(slapd, "(uid=amy)", "memberOf")
    for name in ("amy", "ben", "cat"):
        await client.delete(f"/core/users/{pks[name]}/")
    dan = (await client.get("/core/users/", params={"username": "dan"})).json()["results"][0]
    await client.delete(f"/core/users/{dan['pk']}/")
    await client.delete(f"/core/groups/{group['pk']}/")
