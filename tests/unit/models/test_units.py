"""models/units.py: byte sizes as operators write them, and Kubernetes quantities rendered back."""

from __future__ import annotations

import pytest

from tenantflow.models.units import format_kube_quantity, parse_size

SIZES = [
    ("100GB", 100 * 10**9),
    ("5TB", 5 * 10**12),
    ("5 TB", 5 * 10**12),
    ("10Ti", 10 * 2**40),
    ("1.5Gi", 3 * 2**29),
    ("512", 512),
    ("2TiB", 2 * 2**40),
]


@pytest.mark.parametrize(("text", "size"), SIZES)
def test_sizes_in_bytes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lots", "is not a size"),
        ("10 Xi", "unknown size unit 'Xi'"),
        ("0GB", "must be larger than zero"),
        ("-1GB", "is not a size"),
    ],
)
def test_bad_sizes_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_size(text)


@pytest.mark.parametrize(
    ("size", "quantity"),
    [
        (10 * 2**40, "10Ti"),
        (3 * 2**29, "1536Mi"),
        (2**50, "1Pi"),
        (5 * 10**12, "4882812500Ki"),
        (1000, "1000"),
    ],
)
def test_kube_quantity_is_the_largest_exact_binary_unit(size: int, quantity: str) -> None:
    assert format_kube_quantity(size) == quantity


@pytest.mark.parametrize("text", ["10Ti", "1536Mi", "100GB", "5TB"])
def test_a_rendered_quantity_reads_back_as_the_same_size(text: str) -> None:
    assert parse_size(format_kube_quantity(parse_size(text))) == parse_size(text)
