"""The contract's name and text fields: patterns, and the checks of SSH keys, names and host names.

Each check returns the value or raises a ``ValueError`` naming the field and the fix; :mod:`models.tenant` puts
them on its fields.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from cryptography.hazmat.primitives.serialization import load_ssh_public_key
from pydantic import AfterValidator, Field

SLUG_PATTERN = r"^tenant-[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$"
USERNAME_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
EMAIL_PATTERN = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,180}\.[A-Za-z]{2,24}$"
DURATION_PATTERN = r"^(UNLIMITED|(\d+-)?\d{1,2}:\d{2}:\d{2})$"
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
)


def check_ssh_key(key: str) -> str:
    if "\n" in key or "\r" in key:
        raise ValueError("an SSH key must be one line; put several keys in separate list items")
    parts = key.split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        raise ValueError(
            f"not an OpenSSH public key; expected '<type> <base64> [comment]' with type one of "
            f"{', '.join(SSH_KEY_TYPES)}"
        )
    if len(parts) > 2 and not re.fullmatch(r"[A-Za-z0-9@._+-]{1,100}", " ".join(parts[2:]).replace(" ", "_")):
        raise ValueError("the SSH key comment may only hold letters, digits and @._+-")
    try:
        load_ssh_public_key(" ".join(parts[:2]).encode())
    except (ValueError, TypeError) as exc:
        raise ValueError(f"malformed SSH public key ({exc}); paste the line from ~/.ssh/id_*.pub") from None
    return key


DISPLAY_NAME_FORBIDDEN = ",'\"=<>{}$`\\;|&"
"""Characters sacctmgr cannot take in ``Description=`` (it splits values at commas and strips ' and " as
quotes, so ``Acme, Inc.`` fails ``slurm.accounts`` after approval) or a shell or LDAP would treat specially."""


UNPRINTABLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Unicode categories a name must not contain: controls (U+0085 NEXT LINE among them), format characters
(zero-width and bidirectional marks), surrogates, private use, unassigned, and the line and paragraph separators
U+2028/U+2029. A line or paragraph separator splits a row of ``sacctmgr -P`` output for any reader that splits
on Unicode line boundaries, and none of them has a place in a person's or a company's name."""


def check_printable(field: str, value: str) -> str:
    """``value`` when every character is printable text (letters, marks, digits, punctuation, symbols, spaces);
    a ``ValueError`` naming ``field``, each character by its code point and name, and the fix otherwise."""
    bad = sorted({c for c in value if unicodedata.category(c) in UNPRINTABLE_CATEGORIES})
    if bad:
        shown = ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')})" for c in bad)
        raise ValueError(
            f"{field} contains {shown}, which is not printable text (a control, format or line-separator "
            f"character); write the name without it"
        )
    return value


def check_user_name(value: str) -> str:
    return check_printable("name", value)


def check_display_name(value: str) -> str:
    check_printable("display_name", value)
    bad = sorted({c for c in value if c in DISPLAY_NAME_FORBIDDEN or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        cleaned = " ".join("".join(" " if c in bad else c for c in value).split())
        raise ValueError(
            f"display_name {value!r} contains {shown}, which sacctmgr cannot store in an account's "
            f"Description (it splits values at commas and strips quotes); write it without them, "
            f"e.g. {cleaned!r}"
        )
    return value


MAX_SECRET_BYTES = 1024 * 1024
"""Kubernetes' ``MaxSecretSize``: the apiserver refuses a Secret whose data adds up to more; the authorized-keys
Secret holds every user's keys (a line each)."""

SshKey = Annotated[str, Field(max_length=16_384), AfterValidator(check_ssh_key)]


NodeName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$",
        description="a Kubernetes node name that is also a Slurm NodeName and a label "
        "value: lowercase letters, digits, '-' and '.', at most 63",
    ),
]


def check_hostname(value: str | None) -> str | None:
    if value is not None and any(
        not label or len(label) > 63 or label.startswith("-") or label.endswith("-") for label in value.split(".")
    ):
        raise ValueError(
            f"login.hostname {value!r} is not a DNS name: each dot-separated label must be 1 to 63 "
            "letters, digits or '-', not starting or ending with '-'"
        )
    return value
