"""The directory helper's command is read back exactly, and nothing but plain absolute paths gets into it."""

from __future__ import annotations

import pytest

from tenantflow.models.weka_mount import (
    DirectorySpec,
    directory_command,
    filesystem_handle,
    handle_filesystem,
    parse_directory_command,
    secret_parameters,
)


def test_the_command_round_trips() -> None:
    specs = [DirectorySpec("/alice", 10001, 5000, "0700"), DirectorySpec("/tenant-foo", 0, 5000, "2770")]
    assert parse_directory_command(directory_command(specs)) == specs


@pytest.mark.parametrize(
    "command", [["/bin/sh", "-c", "rm -rf /weka"], directory_command([DirectorySpec("/a", 1, 1, "0700")])[:-1]]
)
def test_other_commands_are_not_the_helper(command: list[str]) -> None:
    assert parse_directory_command(command) is None


@pytest.mark.parametrize("path", ["alice", "/../etc", "/a/../b", "/a b", "/a;rm", "/"])
def test_only_plain_absolute_paths(path: str) -> None:
    with pytest.raises(ValueError):
        DirectorySpec(path, 0, 0, "0700")


def test_handles_and_secret_parameters() -> None:
    assert handle_filesystem(filesystem_handle("home")) == "home"
    assert handle_filesystem("dir/v1/home/x") is None
    params = secret_parameters("creds", "ns")
    assert len(params) == 10 and params["csi.storage.k8s.io/node-publish-secret-name"] == "creds"
