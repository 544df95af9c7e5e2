"""The lab's csi-wekafs runs only the two mount scripts it knows, and prints exactly what ``/bin/sh`` prints when
it runs them (checked against a real shell on a folder standing in for the mount)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tenantflow.lab.weka.csi_facts import (
    MKDIR_SCRIPT,
    REMOVE_SCRIPT,
    before_line,
    handle_filesystem,
    mkdir_run,
    mount_path,
    remove_run,
    removed_line,
)


def test_a_mkdir_run_is_read_from_its_arguments() -> None:
    command = ["/bin/sh", "-ec", MKDIR_SCRIPT, "/weka", "/alice", "10001", "5000", "0700", "/t", "0", "5", "2770"]
    assert mkdir_run(command) == [("/alice", 10001, 5000, 0o700), ("/t", 0, 5, 0o2770)]
    assert mount_path(command) == "/weka"


@pytest.mark.parametrize(
    "args",
    [
        ["/a", "1", "1"],  # a directory short of its mode
        ["/a/../etc", "1", "1", "0700"],
        ["a", "1", "1", "0700"],
        ["/a", "-1", "1", "0700"],
        ["/a", "1", "1", "0800"],
        ["/a;rm", "1", "1", "0700"],
    ],
)
def test_arguments_the_script_would_not_take_plainly_leave_the_job_unrun(args: list[str]) -> None:
    assert mkdir_run(["/bin/sh", "-ec", MKDIR_SCRIPT, "/weka", *args]) is None


@pytest.mark.parametrize(
    "command",
    [
        ["/bin/sh", "-c", "rm -rf /weka"],
        ["/bin/sh", "-ec", MKDIR_SCRIPT.replace("mkdir -p", "mkdir"), "/weka", "/a", "1", "1", "0700"],
        ["/bin/sh", "-ec", REMOVE_SCRIPT, "/weka"],
        ["/bin/sh", "-ec", REMOVE_SCRIPT, "weka", "/a"],
    ],
)
def test_any_other_command_is_not_run(command: list[str]) -> None:
    assert mkdir_run(command) is None and remove_run(command) is None


@pytest.mark.parametrize(
    ("handle", "filesystem"),
    [("weka/v2/home", "home"), ("weka/v2/", None), ("weka/v2/home/alice", None), ("home", None), ("x/weka/v2/a", None)],
)
def test_only_a_whole_filesystem_handle_names_its_filesystem(handle: str, filesystem: str | None) -> None:
    assert handle_filesystem(handle) == filesystem


def test_the_lines_are_what_a_real_shell_prints(tmp_path: Path) -> None:
    old = tmp_path / "tenant-foo"
    old.mkdir()
    os.chown(old, 0, 5000)
    old.chmod(0o2750)
    made = subprocess.run(
        ["/bin/sh", "-ec", MKDIR_SCRIPT, str(tmp_path), "/tenant-foo", "0", "6000", "2770", "/a", "7", "8", "700"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert made == before_line("/tenant-foo", 0, 5000, 0o2750) + "\n"
    removed = subprocess.run(
        ["/bin/sh", "-ec", REMOVE_SCRIPT, str(tmp_path), "/a", "/gone"], capture_output=True, text=True, check=True
    ).stdout
    assert removed == removed_line("/a") + "\n" and not (tmp_path / "a").exists()
