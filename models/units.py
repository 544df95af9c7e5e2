"""Byte sizes as operators write them: Kubernetes quantities (``10Ti``, ``500G``) and Weka's byte units (``5TB``).

A size without a trailing ``B`` is a Kubernetes quantity with Kubernetes' semantics: the suffix is
case-sensitive and ``m`` is milli, so ``100m`` is a tenth of a byte (refused here, never read as 100 MB).
Its grammar is the one ``k8s.io/apimachinery/pkg/api/resource`` documents for ``Quantity`` and its value
comes from the Kubernetes client's own parser (``kubernetes.utils.quantity.parse_quantity``). A size
ending in ``B`` is in Weka's byte units: decimal ``KB MB GB TB PB EB`` or binary ``KiB ... EiB``.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Annotated, cast

from pydantic import AfterValidator

KUBE_QUANTITY = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,2}|[KMGTPE]i|[numkMGTPE])?$")
"""``<signedNumber><suffix>`` of apimachinery's Quantity: binary ``Ki..Ei``, decimal ``n u m k M G T P E``
(lower-case ``k`` only) or an ``e``/``E`` exponent (two digits at most here: no size needs more)."""
MAX_BYTES = 2**64
BYTE_UNITS: dict[str, int] = {
    "B": 1,
    **{f"{prefix}B": 1000 ** (power + 1) for power, prefix in enumerate("KMGTPE")},
    **{f"{prefix}iB": 1024 ** (power + 1) for power, prefix in enumerate("KMGTPE")},
}
_BYTES = re.compile(r"^([+-]?\d+(?:\.\d+)?)([KMGTPE]?i?B)$")
_UNIT = re.compile(r"^[+-]?[\d.]+([A-Za-z]+)$")
_SPACE_BEFORE_UNIT = re.compile(r"(?<=[\d.])\s+(?=[A-Za-z])")


def _kube_quantity() -> ModuleType:
    """``kubernetes/utils/quantity.py`` of the installed client, loaded by itself. It imports only ``decimal``;
    imported through its package it would load the whole client first (``kubernetes/__init__`` imports every API,
    a quarter of a second), which every ``tenantflow`` command would pay for reading a contract."""
    package = importlib.util.find_spec("kubernetes")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the kubernetes client is not installed (pip install kubernetes)")
    source = Path(next(iter(package.submodule_search_locations))) / "utils" / "quantity.py"
    spec = importlib.util.spec_from_file_location("tenantflow.models._kube_quantity", source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


parse_quantity = cast(Callable[[str], Decimal], _kube_quantity().parse_quantity)
"""The Kubernetes client's quantity parser, ``kubernetes.utils.quantity.parse_quantity`` (untyped upstream), which
returns a Decimal."""

EXAMPLES = "a Kubernetes quantity such as 10Ti or 500G, or bytes such as 100GB or 5TB"


def _bytes(text: str) -> Decimal:
    match = _BYTES.match(text)
    if match is not None and match.group(2) in BYTE_UNITS:
        return Decimal(match.group(1)) * BYTE_UNITS[match.group(2)]
    if not KUBE_QUANTITY.match(text):
        unit = _UNIT.match(text)
        if unit is not None:
            raise ValueError(f"unknown size unit {unit.group(1)!r} in {text!r}; write {EXAMPLES}")
        raise ValueError(f"{text!r} is not a size; write {EXAMPLES}")
    return parse_quantity(text)


def parse_size(text: str) -> int:
    """Return the number of bytes in ``text`` (``"100GB"``, ``"10Ti"``, ``"5 TB"``, ``"500G"``)."""
    value = _bytes(_SPACE_BEFORE_UNIT.sub("", text.strip()))
    if value <= 0:
        raise ValueError(f"size {text!r} must be larger than zero")
    if value > MAX_BYTES:
        raise ValueError(f"size {text!r} is larger than 16 EiB")
    if value != value.to_integral_value():
        raise ValueError(
            f"size {text!r} is {value} bytes, not a whole number (in Kubernetes m means milli, "
            "M is 10^6 and Mi 2^20); write " + EXAMPLES
        )
    return int(value)


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
