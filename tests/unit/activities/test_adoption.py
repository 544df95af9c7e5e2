"""The pure parts of adoption (issue 26, item 1): fingerprints as OpenSSH prints them, the proof, giving back, and
what changed since the approval."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tenantflow.activities.common.adoption import (
    ADOPTED,
    adoption_detail,
    changed_since_approval,
    fingerprint,
    fingerprints,
    give_back,
    proven,
)
from tenantflow.activities.common.authentik_client import User
from tenantflow.models.tenant import TenantUser

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"


def user(**fields: object) -> User:
    return User.model_validate({"pk": 7, "username": "zara", "name": "Zara", "email": "", **fields})


def test_a_fingerprint_is_the_one_ssh_keygen_prints(tmp_path: Path) -> None:
    (tmp_path / "k.pub").write_text(KEY + "\n")
    printed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(tmp_path / "k.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert fingerprint(KEY) == printed
    assert fingerprints(f"{KEY}\n\n{KEY}") == [printed, printed]
    assert fingerprint("ssh-ed25519 not*base64") == "unreadable ssh-ed25519"


def test_only_the_contracts_email_proves_the_account() -> None:
    person = TenantUser(username="zara", name="Zara", email="zara@t.example", ssh_keys=[KEY])
    assert proven(user(email=" Zara@T.example "), person)
    assert not proven(user(email="zara@elsewhere.example"), person)
    assert not proven(user(email=""), person)


def test_giving_back_restores_what_the_adoption_overwrote_and_never_deactivates() -> None:
    marker = {
        "by": "tenant/t",
        "run": "r1",
        "previous": {"name": "Zara E", "email": "z@else", "is_active": False, "attributes": {"ssh_keys": None}},
        "wrote": {"name": "Zara", "email": "zara@t.example", "attributes": {"ssh_keys": KEY}},
        "added_to_group": True,
    }
    adopted = user(
        name="Zara",
        email="zara@t.example",
        groups=["g1"],
        attributes={"ssh_keys": KEY, "gidNumber": "4001", "department": "physics", ADOPTED: marker},
    )
    patch, leave, left = give_back(adopted, "g1")
    assert patch == {"name": "Zara E", "email": "z@else", "attributes": {"gidNumber": "4001", "department": "physics"}}
    assert leave and "is_active" not in patch and not left
    unmarked = user(groups=["g1"], attributes={"department": "physics"})
    assert give_back(unmarked, "g1") == ({}, True, [])
    assert give_back(unmarked, "g2") == ({}, False, [])


def test_giving_back_leaves_what_the_person_changed_since() -> None:
    marker = {
        "previous": {"name": "Zara E", "email": "z@else", "attributes": {"ssh_keys": None}},
        "wrote": {"name": "Zara", "email": "zara@t.example", "attributes": {"ssh_keys": KEY}},
    }
    moved = user(name="Zara", email="zara@moved.example", attributes={"ssh_keys": "her own", ADOPTED: marker})
    patch, _, left = give_back(moved, "")
    assert patch == {"name": "Zara E", "attributes": {"ssh_keys": "her own"}}
    assert left == [
        "email: 'zara@moved.example', not the 'zara@t.example' tenantflow wrote; left as it is, not put back to "
        "'z@else'",
        f"attributes.ssh_keys: 'her own', not the {KEY!r} tenantflow wrote; left as it is, not put back to None",
    ]
    legacy = user(name="Zara", attributes={ADOPTED: {"previous": {"name": "Zara E"}}})  # recorded before "wrote"
    assert give_back(legacy, "") == (
        {"attributes": {}},
        False,
        ["name: 'Zara', and no record of what tenantflow wrote; left as it is, not put back to 'Zara E'"],
    )


def test_what_changed_since_the_approval_names_each_field_with_both_values() -> None:
    person = TenantUser(username="zara", name="Zara", email="zara@t.example", ssh_keys=[KEY], adopt_existing=True)
    seen = user(email="z@else", attributes={"ssh_keys": KEY})
    approved = adoption_detail(seen, person, "active, pk 7")
    assert changed_since_approval(approved, seen, person, "active, pk 7") == []
    rekeyed = user(email="z@else", name="Zara B", attributes={})
    assert changed_since_approval(approved, rekeyed, person, "active, pk 7") == [
        "name: unchanged (Zara) when approved, Zara B -> Zara now",
        f"ssh_keys: unchanged ({fingerprint(KEY)}) when approved, none -> {fingerprint(KEY)} now",
    ]
    off = user(email="z@else", attributes={"ssh_keys": KEY}, is_active=False)
    assert changed_since_approval(approved, off, person, "inactive, pk 7") == [
        "adopt_existing: True (existing account: active, pk 7) when approved, True (existing account: inactive, "
        "pk 7) now",
        "is_active: not shown when approved, false -> true now",
    ]
    assert changed_since_approval(approved, None, person, "") == ["account: existed when approved, deleted now"]
