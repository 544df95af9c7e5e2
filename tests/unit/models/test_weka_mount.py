"""The directory helper's command does what it says under a real /bin/sh, and nothing but plain absolute paths gets
into it (the lab's csi-wekafs reading it back: ``tests/lab/test_facts_agree.py``)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tenantflow.models.weka_mount import (
    DirectorySpec,
    Owner,
    directory_command,
    filesystem_handle,
    parse_owners,
    secret_parameters,
)


@pytest.mark.parametrize("path", ["alice", "/../etc", "/a/../b", "/a b", "/a;rm", "/"])
def test_only_plain_absolute_paths(path: str) -> None:
    with pytest.raises(ValueError):
        DirectorySpec(path, 0, 0, "0700")


def test_handles_and_secret_parameters() -> None:
    assert filesystem_handle("home") == "weka/v2/home"
    params = secret_parameters("creds", "ns")
    assert len(params) == 10 and params["csi.storage.k8s.io/node-publish-secret-name"] == "creds"


def test_the_script_logs_the_owner_it_found_and_sets_the_wanted_one(tmp_path: Path) -> None:
    """The real script under /bin/sh (as root, as the Job runs) on a folder standing in for the mount: an
    existing directory's owner is logged as :func:`parse_owners` reads it, then every directory gets its own."""
    old = tmp_path / "tenant-foo"
    old.mkdir()
    os.chown(old, 0, 5000)
    old.chmod(0o2750)
    specs = [DirectorySpec("/tenant-foo", 0, 6000, "2770"), DirectorySpec("/alice", 10001, 6000, "0700")]
    command = directory_command(specs)
    command[3] = str(tmp_path)
    log = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert parse_owners(log) == {"/tenant-foo": Owner(0, 5000, 0o2750)}
    assert log == "before /tenant-foo 0 5000 2750\n"
    found = {p.name: (p.stat().st_uid, p.stat().st_gid, stat.S_IMODE(p.stat().st_mode)) for p in tmp_path.iterdir()}
    assert found == {"tenant-foo": (0, 6000, 0o2770), "alice": (10001, 6000, 0o700)}


def test_log_lines_that_are_not_the_scripts_are_ignored() -> None:
    assert parse_owners("before /a 1 2\nbefore a 1 2 700\nnoise\nbefore /b 1 2 9\n") == {}


def test_a_spec_says_what_is_wrong_with_it() -> None:
    with pytest.raises(ValueError, match=r"not a plain absolute path: 'a'"):
        DirectorySpec("a", 0, 0, "0700")
    with pytest.raises(ValueError, match=r"not an octal mode: '0800'"):
        DirectorySpec("/a", 0, 0, "0800")
    for uid, gid in ((-1, 0), (0, -1)):
        with pytest.raises(ValueError, match="uid and gid must not be negative"):
            DirectorySpec("/a", uid, gid, "0700")
    assert DirectorySpec("/a", 0, 0, "700").gid == 0


def test_the_owner_a_spec_asks_for() -> None:
    assert Owner.of(DirectorySpec("/alice", 10001, 5000, "2770")) == Owner(10001, 5000, 0o2770)


def test_every_csi_secret_parameter_names_the_secret_and_its_namespace() -> None:
    params = secret_parameters("weka-creds", "tenant-a")
    assert params["csi.storage.k8s.io/node-publish-secret-namespace"] == "tenant-a"
    assert sorted(set(params.values())) == ["tenant-a", "weka-creds"] and len(params) == 10
