"""models/units.py: byte sizes as operators write them (Kubernetes semantics), and quantities rendered back."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tenantflow.models.units import format_kube_quantity, parse_size
from tests.unit.tenants import tenant

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
        ("-1GB", "must be larger than zero"),
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


KUBERNETES_QUANTITIES = [
    # (text, bytes) as k8s.io/apimachinery's resource.Quantity reads them; suffixes are case-sensitive
    ("1k", 10**3),
    ("1M", 10**6),
    ("1G", 10**9),
    ("1T", 10**12),
    ("1P", 10**15),
    ("1E", 10**18),
    ("1Ki", 2**10),
    ("1Mi", 2**20),
    ("1Gi", 2**30),
    ("1Ti", 2**40),
    ("1Pi", 2**50),
    ("1Ei", 2**60),
    ("1e3", 10**3),
    ("1E6", 10**6),
    ("1.5k", 1500),
    (".5Ki", 512),
    ("5000m", 5),
    ("+10Gi", 10 * 2**30),
]


@pytest.mark.parametrize(("text", "size"), KUBERNETES_QUANTITIES)
def test_kubernetes_quantities_have_kubernetes_semantics(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("100m", "is 0.100 bytes, not a whole number (in Kubernetes m means milli"),
        ("1500u", "not a whole number"),
        ("1K", "unknown size unit 'K'"),
        ("1ki", "unknown size unit 'ki'"),
        ("100mb", "unknown size unit 'mb'"),
        ("Infinity", "is not a size"),
        ("NaN", "is not a size"),
        ("1e400", "is not a size"),
        ("1e30", "larger than 16 EiB"),
    ],
)
def test_what_kubernetes_refuses_or_is_no_whole_byte_count_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_size(text)


def test_a_milli_quantity_in_a_contract_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as error:
        tenant(storage__pvc_size="100m")
    assert [e["loc"] for e in error.value.errors()] == [("storage", "pvc_size")]
    assert "m means milli" in str(error.value)
