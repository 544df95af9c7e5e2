"""Structural defaulting of custom resources, and quantity normalization (Kueue's and the core types').

:func:`schema_defaults` fills every absent property whose schema has a ``default``, recursively into objects that
exist (or were just defaulted) and into array items, the way kube-apiserver defaults a custom resource on create
and update from its CRD version's OpenAPI schema. :func:`normalize_quantities` rewrites ``int-or-string``
quantity fields (a schema ``pattern`` of a Kubernetes quantity) to their canonical form (``10000`` becomes
``"10k"``, ``"1024Mi"`` becomes ``"1Gi"``): what Kueue's defaulting webhooks return, since they round-trip the
object through Go's ``resource.Quantity``. :func:`canonical_resource_lists` does the same for the ``ResourceList``
maps of the core types (k8s.io/api core/v1 types.go: ``type ResourceList map[ResourceName]resource.Quantity``),
which kube-apiserver decodes into Quantities and so stores canonically: a ResourceQuota's ``hard.requests.memory:
8192Gi`` reads back as ``8Ti``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from tenantflow.lab.kubeapi.clone import clone

BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
DECIMAL = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0), ("m", -3), ("u", -6), ("n", -9))


def schema_defaults(schema: dict[str, Any], value: Any) -> None:
    """Fill defaults of ``schema`` into ``value`` in place."""
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = clone(sub["default"])
            if name in value:
                schema_defaults(sub, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            schema_defaults(schema["items"], item)


def canonical_quantity(value: str | int | float) -> str:
    """The canonical string Go's ``resource.Quantity`` prints for ``value``."""
    amount = Decimal(parse_quantity(value))
    if amount == 0:
        return "0"
    text = str(value)
    if any(text.endswith(suffix) for suffix, _ in BINARY) and amount == amount.to_integral_value():
        for suffix, factor in BINARY:
            if amount % factor == 0:
                return f"{int(amount / factor)}{suffix}"
    for suffix, exponent in DECIMAL:
        scaled = amount.scaleb(-exponent)
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return format(amount.normalize(), "f")


def _is_quantity(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-int-or-string")) and "KMGTPE" in str(schema.get("pattern", ""))


def normalize_quantities(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with every quantity field of ``schema`` in canonical form (unparsable values stay as they are)."""
    if _is_quantity(schema) and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            return canonical_quantity(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        return {k: normalize_quantities(props[k], v) if k in props else v for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [normalize_quantities(schema["items"], item) for item in value]
    return value


ANY_ITEM = "*"
CORE_RESOURCE_LISTS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("", "resourcequotas"): (("spec", "hard"), ("status", "hard"), ("status", "used")),
    ("", "limitranges"): tuple(
        ("spec", "limits", ANY_ITEM, field) for field in ("max", "min", "default", "defaultRequest")
    ),
    ("", "persistentvolumeclaims"): (("spec", "resources", "requests"), ("spec", "resources", "limits")),
    ("", "pods"): tuple(
        ("spec", containers, ANY_ITEM, "resources", field)
        for containers in ("containers", "initContainers")
        for field in ("requests", "limits")
    ),
}
"""Where each core resource holds a ``ResourceList`` (``*``: every item of a list)."""


def _resource_lists(value: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    if not path:
        return [value] if isinstance(value, dict) else []
    head, rest = path[0], path[1:]
    if head == ANY_ITEM:
        return [found for item in value for found in _resource_lists(item, rest)] if isinstance(value, list) else []
    return _resource_lists(value.get(head), rest) if isinstance(value, dict) else []


def canonical_resource_lists(key: tuple[str, str], obj: dict[str, Any]) -> None:
    """Rewrite, in place, every quantity of ``obj``'s ResourceLists in canonical form (unparsable values stay:
    validation refuses them)."""
    for path in CORE_RESOURCE_LISTS.get(key, ()):
        for resources in _resource_lists(obj, path):
            for name, amount in resources.items():
                if isinstance(amount, (str, int, float)) and not isinstance(amount, bool):
                    try:
                        resources[name] = canonical_quantity(amount)
                    except ValueError:
                        continue
