"""Byte sizes as operators write them (Weka's decimal ``5TB``, Kubernetes' ``10Ti``)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_UNITS: dict[str, int] = {
    "": 1,
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
    "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40, "PI": 2**50,
    "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """Return the number of bytes in ``text`` (``"100GB"``, ``"10Ti"``, ``"5 TB"``)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size; write a number and a unit such as 100GB, 5TB or 10Ti")
    number, unit = match.groups()
    factor = _UNITS.get(unit.upper())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r} in {text!r}; use B, GB, TB, Gi or Ti")
    value = int(float(number) * factor)
    if value <= 0:
        raise ValueError(f"size {text!r} must be larger than zero")
    return value


def _check_size(text: str) -> str:
    parse_size(text)
    return text


Size = Annotated[str, AfterValidator(_check_size)]


def format_kube_quantity(size_bytes: int) -> str:
    """Render bytes as the largest exact binary Kubernetes quantity (``10Ti``)."""
    for suffix, factor in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if size_bytes % factor == 0:
            return f"{size_bytes // factor}{suffix}"
    return str(size_bytes)
