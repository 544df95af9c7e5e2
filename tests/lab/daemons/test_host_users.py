"""Host user resolution files (lab/daemons/host_users.py) and the Weka mount stand-in with the df stand-in."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tenantflow.lab.daemons import host_users, weka_mounts
from tenantflow.lab.daemons import ldap_tree as tree
from tenantflow.lab.daemons.host_users import GroupEntry, PasswdEntry
from tenantflow.lab.daemons.slapd import SlapdHandle

LAB_BIN = Path(__file__).resolve().parents[3] / "lab" / "bin"


def test_nsswitch_gets_extrausers_after_files_once(tmp_path: Path) -> None:
    conf = tmp_path / "nsswitch.conf"
    conf.write_text("passwd:         files systemd\ngroup:          files\nshadow:         files\nhosts: dns\n")
    assert host_users.ensure_nsswitch(conf)
    assert conf.read_text().splitlines()[:3] == [
        "passwd:         files extrausers systemd",
        "group:          files extrausers",
        "shadow:         files",
    ]
    assert not host_users.ensure_nsswitch(conf)


def test_publish_merges_labs_in_order_and_never_shadows_host_users(tmp_path: Path) -> None:
    root, lab_a, lab_b = tmp_path / "extrausers", tmp_path / "a", tmp_path / "b"
    alice = PasswdEntry("alice", 2002, 4100, "Alice", str(lab_a / "home" / "alice"))
    host_users.publish(
        lab_a,
        [alice, PasswdEntry("root", 2050, 2050, "", "/root"), PasswdEntry("low", 999, 999, "", "/x")],
        [GroupEntry("tenant-foo", 4100, ("alice",))],
        root,
    )
    assert (root / "passwd").read_text() == f"alice:x:2002:4100:Alice:{lab_a}/home/alice:/bin/bash\n"
    assert (root / "group").read_text() == "tenant-foo:x:4100:alice\n"
    bob = PasswdEntry("bob", 2002, 4200, "", str(lab_b / "home" / "bob"))
    host_users.publish(lab_b, [PasswdEntry("alice", 3002, 4200, "", "/y"), bob], [], root)
    assert (root / "passwd").read_text() == f"{alice.line()}\n", "the earlier lab keeps the name and the uid"
    assert (lab_b / "nss" / "passwd").read_text() == f"alice:x:3002:4200::/y:/bin/bash\n{bob.line()}\n"
    host_users.withdraw(lab_a, root)
    assert (root / "passwd").read_text() == f"alice:x:3002:4200::/y:/bin/bash\n{bob.line()}\n"
    host_users.withdraw(lab_b, root)
    assert (root / "passwd").read_text() == "" and (root / "group").read_text() == ""


def test_homes_belong_to_their_users_and_are_reachable(tmp_path: Path) -> None:
    state = tmp_path / "private" / "lab"
    state.mkdir(parents=True)
    (tmp_path / "private").chmod(0o700)
    user = PasswdEntry("alice", 2002, 4100, "", str(host_users.home_root(state) / "alice"))
    host_users.ensure_homes(state, [user])
    home = Path(user.home)
    assert (home.stat().st_uid, home.stat().st_gid, home.stat().st_mode & 0o777) == (2002, 4100, 0o700)
    assert (tmp_path / "private").stat().st_mode & 0o001


def _df(table: Path, *args: str) -> str:
    env = {**os.environ, "LAB_MOUNT_TABLE": str(table)}
    return subprocess.run([str(LAB_BIN / "df"), *args], env=env, capture_output=True, text=True, check=True).stdout


def test_weka_directories_become_wekafs_mounts_and_other_paths_stay_on_their_fs(tmp_path: Path) -> None:
    snapshot = {
        "filesystems": [
            {
                "name": "tenant-foo-scratch",
                "total_capacity": 10**15,
                "directories": ["/", "/tenant-foo"],
                "quotas": [{"path": "/tenant-foo", "hard_limit_bytes": 50 * 10**12}],
            },
            {"name": "tenant-foo-home", "total_capacity": 10**13, "directories": ["/", "/alice"], "quotas": []},
        ]
    }
    weka_mounts.apply(tmp_path, weka_mounts.wanted_mounts(snapshot, tmp_path))
    scratch = weka_mounts.mount_root(tmp_path) / "scratch" / "tenant-foo"
    assert scratch.is_dir()
    table = weka_mounts.mount_table(tmp_path)
    assert table.read_text() == f"tenant-foo-scratch:/tenant-foo {scratch} wekafs {50 * 10**12}\n"
    row = _df(table, "-PT", str(scratch / "sub")).splitlines()[1].split()
    assert row[:2] == ["tenant-foo-scratch:/tenant-foo", "wekafs"] and row[-1] == str(scratch)
    elsewhere = _df(table, "-PT", str(tmp_path)).splitlines()[1].split()
    assert elsewhere[1] != "wekafs"
    weka_mounts.apply(tmp_path, [])
    assert not scratch.exists() and table.read_text() == ""


@pytest.mark.parametrize("path", ["/", "/tmp"])
def test_df_without_a_mount_table_is_the_real_df(path: str) -> None:
    real = subprocess.run(["/bin/df", "-P", path], capture_output=True, text=True, check=True).stdout
    assert (
        subprocess.run([str(LAB_BIN / "df"), "-P", path], capture_output=True, text=True, check=True)
        .stdout.splitlines()[1]
        .split()[0]
        == real.splitlines()[1].split()[0]
    )


def _scratch_mount(state: Path, name: str, owners: dict[str, dict[str, object]]) -> os.stat_result:
    """The folder the lab's Weka mount stand-in gives ``<scratch>/<name>`` after one sync, Weka recording
    ``owners``."""
    snapshot = {
        "filesystems": [{"name": "scratch", "total_capacity": 10**12, "directories": [f"/{name}"], "owners": owners}]
    }
    weka_mounts.apply(state, weka_mounts.wanted_mounts(snapshot, state))
    return (weka_mounts.mount_root(state) / "scratch" / name).stat()


def _own_groups(state: Path, text: str) -> None:
    nss = host_users.lab_nss_dir(state)
    nss.mkdir()
    (nss / "group").write_text(text)


def test_a_mount_shows_the_owner_weka_recorded_never_a_gid_looked_up_by_name(tmp_path: Path) -> None:
    """The lab's own files name a tenant-foo group with another gid: the folder still shows what the directory
    Job set (a directory left with a gone group's gid stays so, as on a real Weka mount)."""
    _own_groups(tmp_path, "tenant-foo:x:54321:alice\n")
    folder = _scratch_mount(tmp_path, "tenant-foo", {"/tenant-foo": {"uid": 0, "gid": 6000, "mode": "2770"}})
    assert (folder.st_uid, folder.st_gid, stat.S_IMODE(folder.st_mode)) == (0, 6000, 0o2770)
    folder = _scratch_mount(tmp_path, "tenant-foo", {"/tenant-foo": {"uid": 0, "gid": 6001, "mode": "2770"}})
    assert folder.st_gid == 6001, "a later chown reaches the mount"


def test_a_directory_without_a_recorded_owner_is_roots(tmp_path: Path) -> None:
    """Made without a chown (seeded, or by hand): root:root 0755, as ``mkdir`` by root leaves it."""
    folder = _scratch_mount(tmp_path, "daemon", {})
    assert (folder.st_uid, folder.st_gid, stat.S_IMODE(folder.st_mode)) == (0, 0, 0o755)


def test_a_reonboarded_tenant_group_sharing_its_users_gid_resolves_in_the_labs_own_files(tmp_path: Path) -> None:
    """Re-onboarding with the users kept: their virtual groups (gid = the user's gidNumber = the new tenant
    group's gid) come before the newer tenant group in the directory. Both must resolve in the lab's own
    files (a pod's view of the scratch folder's group), never another lab's of the same name."""
    root, older_lab, lab = tmp_path / "extrausers", tmp_path / "a-older", tmp_path / "b-lab"
    host_users.publish(older_lab, [], [GroupEntry("tenant-foo", 17806, ("alice",))], root)
    groups = [GroupEntry("alice", 96920, ("alice",)), GroupEntry("tenant-foo", 96920, ("alice",))]
    host_users.publish(lab, [PasswdEntry("alice", 2002, 96920, "", "/x")], groups, root)
    assert (host_users.lab_nss_dir(lab) / "group").read_text() == "alice:x:96920:alice\ntenant-foo:x:96920:alice\n"
    assert (root / "group").read_text().splitlines()[0] == "tenant-foo:x:17806:alice", "the older lab keeps it"


@pytest.mark.ldap
def test_a_tenant_group_remade_after_its_users_resolves_from_the_real_directory(
    slapd: SlapdHandle, tmp_path: Path
) -> None:
    """Onboard, offboard keeping the users, re-onboard with a new gid, as the suite does to tenant-foo: the
    users' virtual groups are older entries than the new tenant group and carry its gid; the lab's files
    must still list the tenant group, or a job's user is not in the group owning its scratch folder (smoke 7c:
    can't cd)."""
    with slapd.connect_admin() as conn:
        tree.upsert_group(conn, tree.LdapGroup("tenant-reon", 4301, members=("erin-reon",)))
        tree.upsert_user(conn, tree.LdapUser("erin-reon", uid_number=2301, gid_number=4301))
        tree.delete_group(conn, "tenant-reon")
        tree.upsert_group(conn, tree.LdapGroup("tenant-reon", 4302, members=("erin-reon",)))
        tree.upsert_user(conn, tree.LdapUser("erin-reon", uid_number=2301, gid_number=4302, is_active=True))
    host_users.sync_once(slapd.url, slapd.bind_dn, slapd.bind_password, tmp_path, tmp_path / "extrausers")
    own = (host_users.lab_nss_dir(tmp_path) / "group").read_text().splitlines()
    assert {"erin-reon:x:4302:erin-reon", "tenant-reon:x:4302:erin-reon"} <= set(own)
