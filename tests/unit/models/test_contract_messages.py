"""The exact words of the contract's refusals: each names the field, the problem and the fix (house rule)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tenantflow.models.contract_fields import check_display_name, check_hostname, check_ssh_key, check_user_name
from tenantflow.models.sku import lookup_sku
from tenantflow.models.units import format_kube_quantity, parse_size

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L"
TYPES = (
    "ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, sk-ssh-ed25519@openssh.com"
)
UNPRINTABLE = "which is not printable text (a control, format or line-separator character); write the name without it"
WHOLE = (
    "not a whole number (in Kubernetes m means milli, M is 10^6 and Mi 2^20); write a Kubernetes quantity such as "
    "10Ti or 500G, or bytes such as 100GB or 5TB"
)


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (check_ssh_key, KEY + "\rssh-rsa AAAA", "an SSH key must be one line; put several keys in separate list items"),
        (
            check_ssh_key,
            "ssh-foo AAAA",
            f"not an OpenSSH public key; expected '<type> <base64> [comment]' with type one of {TYPES}",
        ),
        (check_ssh_key, KEY, None),
        (check_ssh_key, "ssh-ed25519", "not an OpenSSH public key"),
        (check_ssh_key, KEY + " a;b", "the SSH key comment may only hold letters, digits and @._+-"),
        (check_ssh_key, KEY[:-20], "malformed SSH public key (Invalid data); paste the line from ~/.ssh/id_*.pub"),
        (check_user_name, "a\u200bb", f"name contains U+200B (ZERO WIDTH SPACE), {UNPRINTABLE}"),
        (check_display_name, "x\ue000", f"display_name contains U+E000 (unnamed), {UNPRINTABLE}"),
        (check_display_name, "A,B'C", "display_name \"A,B'C\" contains \"'\" ',', which sacctmgr cannot store"),
        (
            check_hostname,
            "a-.b",
            "login.hostname 'a-.b' is not a DNS name: each dot-separated label must be 1 to 63 letters, digits or "
            "'-', not starting or ending with '-'",
        ),
        (check_hostname, "-a.b", "is not a DNS name"),
        (check_hostname, "a" * 63 + ".b", None),
        (check_hostname, "a" * 64 + ".b", "is not a DNS name"),
        (parse_size, "100m", f"size '100m' is 0.100 bytes, {WHOLE}"),
        (lookup_sku, "x", "unknown GPU SKU 'x'; use one of: a100-8x, h100-8x, h200-8x, l40s-4x"),
    ],
)
def test_a_refusal_says_what_and_how_to_fix_it(check: Callable[[str], object], value: str, message: str | None) -> None:
    if message is None:
        check(value)
        return
    with pytest.raises(ValueError) as refused:
        check(value)
    assert message in str(refused.value)


def test_an_ssh_key_comment_may_have_spaces() -> None:
    assert check_ssh_key(KEY + " alice at laptop") == KEY + " alice at laptop"


@pytest.mark.parametrize(
    ("size", "quantity"), [(2**30, "1Gi"), (3 * 2**30, "3Gi"), (2**30 + 2**20, "1025Mi"), (1000, "1000")]
)
def test_a_size_is_written_in_the_largest_exact_binary_unit(size: int, quantity: str) -> None:
    assert format_kube_quantity(size) == quantity
