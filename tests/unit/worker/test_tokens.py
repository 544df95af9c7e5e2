"""The token file's format: each line's roles over patterns, a clear error naming the line and the fix for a bad
one, the role each grant gives, and the file read again when it changes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tenantflow.worker.tokens import Grant, Role, TokenFile, TokenFileError, TokenTable, new_token

TOKEN, LINE = new_token("alice", ["requester:tenant-a*", "approver:tenant-*"])
DIGEST = hashlib.sha256(b"a token of alice's").hexdigest()
"""A fixed digest for parameters: pytest-xdist workers must collect the same test ids."""


def test_a_line_grants_its_user_each_role_over_its_pattern() -> None:
    entry = TokenTable.parse(["# a comment", "", LINE]).entry(TOKEN)
    assert entry is not None and entry.user == "alice"
    assert entry.grants == (Grant(Role.requester, "tenant-a*"), Grant(Role.approver, "tenant-*"))
    assert TokenTable.parse([LINE]).entry(TOKEN + "x") is None
    assert TOKEN not in LINE, "the file holds only the token's hash"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (f"{DIGEST} alice", "line 1: no roles for alice: append ROLE:PATTERN to the line"),
        (f"{DIGEST} alice reader:tenant-*", "unknown role 'reader'; roles are viewer, requester, approver, admin"),
        (f"{DIGEST} alice tenant-*", "'tenant-*' is not ROLE:PATTERN (e.g. viewer:tenant-*)"),
        (f"{DIGEST} alice viewer:", "'viewer:': the pattern must match"),
        (f"{DIGEST} alice viewer:tenant,a", "'viewer:tenant,a': the pattern must match"),
        ("nothex alice viewer:*", "line 1: expected 'SHA256_HEX USER ROLE:PATTERN ...'"),
        (DIGEST, "line 1: expected 'SHA256_HEX USER ROLE:PATTERN ...'"),
    ],
)
def test_a_bad_line_is_refused_naming_the_line_and_the_fix(line: str, says: str) -> None:
    with pytest.raises(TokenFileError) as refused:
        TokenTable.parse([line], "tokens")
    assert says in str(refused.value)
    assert str(refused.value).startswith("tokens"), "the message names the file"


def test_a_token_on_two_lines_is_refused() -> None:
    with pytest.raises(TokenFileError, match="line 2: the token of line 1 again"):
        TokenTable.parse([LINE, LINE.replace("alice", "mallory")])


@pytest.mark.parametrize(
    ("grant", "role", "gives"),
    [
        ("viewer:*", Role.viewer, True),
        ("viewer:*", Role.requester, False),
        ("requester:*", Role.viewer, True),
        ("requester:*", Role.approver, False),
        ("approver:*", Role.viewer, True),
        ("approver:*", Role.requester, False),
        ("admin:*", Role.requester, True),
        ("admin:*", Role.approver, True),
    ],
)
def test_each_role_includes_viewer_and_admin_includes_all(grant: str, role: Role, gives: bool) -> None:
    assert Grant.parse(grant).includes(role) is gives


def test_patterns_match_names_fnmatch_style_and_case_sensitive() -> None:
    grant = Grant.parse("viewer:tenant-a*")
    assert grant.covers("tenant-a") and grant.covers("tenant-abc")
    assert not grant.covers("tenant-b") and not grant.covers("Tenant-a") and not grant.covers("x-tenant-a")


def test_new_token_needs_a_role() -> None:
    with pytest.raises(TokenFileError, match="give alice at least one role: --role ROLE:PATTERN"):
        new_token("alice", [])


def test_the_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    bob, bob_line = new_token("bob", ["viewer:*"])
    path.write_text(f"{LINE}\n{bob_line}\n")
    tokens = TokenFile(path)
    assert tokens.current().entry(bob) is not None
    path.write_text(f"{LINE}\n")
    assert tokens.current().entry(bob) is None, "a removed token stops working"
    path.write_text(f"{LINE}\n{'0' * 64} carol\n")
    with pytest.raises(TokenFileError, match="line 2: no roles for carol"):
        tokens.current()
    path.unlink()
    with pytest.raises(TokenFileError, match="no such file"):
        tokens.current()
