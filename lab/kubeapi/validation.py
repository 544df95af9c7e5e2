"""Schema validation of written objects, with compiled validators cached per kind.

* Built-in kinds use the strict JSON schemas shipped by ``kubernetes-validate``
  (the same files ``kubernetes_validate.utils.validate(obj, "1.32", strict=True)``
  reads; that function re-reads the 1 MB definitions file on every call, ~20 ms, so
  validators are compiled once here and reused, well under 1 ms per object).
* Custom resources use ``jsonschema`` against their CRD version's
  ``openAPIV3Schema`` (``x-kubernetes-*`` keys ignored, ``nullable`` honoured).

:func:`check` returns the type/required errors and, separately, the unknown
fields, so the caller can apply ``fieldValidation`` (Strict: reject, Warn/Ignore:
drop them) as the real apiserver does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema
import referencing
from kubernetes_validate import utils as kv

from tenantflow.lab.kubeapi import errors
from tenantflow.lab.kubeapi.registry import ResourceType

KUBERNETES_VERSION = "1.32"


@dataclass
class Findings:
    """Errors as ``(dotted.field, message)`` and unknown fields as paths."""

    errors: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[list[str | int]] = field(default_factory=list)


def dotted(path: list[str | int] | Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _schema_dir() -> tuple[str, referencing.Registry]:
    version = [v for v in kv.all_versions() if kv.major_minor(v) <= KUBERNETES_VERSION][-1]
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    defs = kv.schema_contents(f"{schema_dir}/_definitions.json", KUBERNETES_VERSION)
    registry: referencing.Registry = referencing.Resource.from_contents(defs) @ referencing.Registry()
    return schema_dir, registry


@lru_cache(maxsize=256)
def _builtin_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    schema_dir, registry = _schema_dir()
    short = (
        api_version.split("/")[0].split(".")[0] + "-" + api_version.split("/")[1] if "/" in api_version else api_version
    )
    try:
        schema = kv.schema_contents(f"{schema_dir}/{kind.lower()}-{short}.json", KUBERNETES_VERSION)
    except FileNotFoundError:
        return None
    resource = referencing.Resource.from_contents(schema)
    return jsonschema.Draft202012Validator(schema, registry=resource @ registry)


def _openapi_to_jsonschema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: _openapi_to_jsonschema(v) for k, v in schema.items() if not k.startswith("x-kubernetes-") and k != "nullable"
    }
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in schema and isinstance(schema["properties"], dict):
        out["properties"] = {k: _openapi_to_jsonschema(v) for k, v in schema["properties"].items()}
    return out


CR_CACHE_SIZE = 64
_cr_cache: OrderedDict[int, tuple[dict[str, Any], jsonschema.protocols.Validator]] = OrderedDict()


def _cr_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """The compiled validator of ``schema``, cached by identity. An entry holds its schema, so while it is cached
    no other schema can take that ``id``; the least recently used entries are dropped beyond
    :data:`CR_CACHE_SIZE` (every store registers its own copies of its CRDs)."""
    with _lock:
        cached = _cr_cache.get(id(schema))
        if cached is not None:
            _cr_cache.move_to_end(id(schema))
            return cached[1]
        validator = jsonschema.Draft7Validator(_openapi_to_jsonschema(schema))
        _cr_cache[id(schema)] = (schema, validator)
        while len(_cr_cache) > CR_CACHE_SIZE:
            _cr_cache.popitem(last=False)
        return validator


def _unknown_cr_fields(schema: dict[str, Any], value: Any, path: list[str | int], out: list[list[str | int]]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-embedded-resource"):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if props is not None and key in props:
                _unknown_cr_fields(props[key], item, [*path, key], out)
            elif isinstance(additional, dict):
                _unknown_cr_fields(additional, item, [*path, key], out)
            elif props is not None and not (not path and key in ("apiVersion", "kind", "metadata")):
                out.append([*path, key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _unknown_cr_fields(schema["items"], item, [*path, i], out)


def _cr_errors(err: jsonschema.ValidationError) -> list[tuple[str, str]]:
    """``(field, message)`` of one schema failure of a custom resource. A missing required property is reported
    as kube-apiserver reports it (apiextensions-apiserver pkg/apiserver/validation turns kube-openapi's
    RequiredFailCode into ``field.Required``): at the property's own path, ``Required value``."""
    path = list(err.absolute_path)
    required = err.validator_value if err.validator == "required" else None
    if isinstance(required, list) and isinstance(err.instance, dict):
        return [(dotted([*path, name]), errors.REQUIRED) for name in required if name not in err.instance]
    return [(dotted(path), err.message)]


def check(rt: ResourceType, obj: dict[str, Any], version: str) -> Findings:
    """Validate ``obj`` as type ``rt`` at ``version``; never raises for invalid input."""
    findings = Findings()
    if rt.custom:
        schema = rt.schemas.get(version) or {}
        if not schema:
            return findings
        for err in _cr_validator(schema).iter_errors(obj):
            for entry in _cr_errors(err):
                if entry not in findings.errors:
                    findings.errors.append(entry)
        _unknown_cr_fields(schema, obj, [], findings.unknown)
        return findings
    validator = _builtin_validator(rt.api_version(version), rt.kind)
    if validator is None:
        return findings
    for err in validator.iter_errors(obj):
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = (err.schema.get("properties") or {}) if isinstance(err.schema, dict) else {}
            findings.unknown.extend([*err.absolute_path, k] for k in err.instance if k not in known)
        else:
            findings.errors.append((dotted(list(err.absolute_path)), err.message))
    return findings


def drop_fields(obj: dict[str, Any], paths: list[list[str | int]]) -> None:
    """Remove unknown fields in place (what the apiserver does when not strict)."""
    for path in paths:
        parent: Any = obj
        for part in path[:-1]:
            parent = parent[part]
        parent.pop(path[-1], None)


def enforce(rt: ResourceType, obj: dict[str, Any], field_validation: str, warnings: list[str] | None) -> None:
    """Raise Invalid on schema errors; apply ``fieldValidation`` (Strict, Warn, Ignore) to unknown fields."""
    version = (obj.get("apiVersion") or "").rpartition("/")[2]
    findings = check(rt, obj, version)
    name = (obj.get("metadata") or {}).get("name", "")
    if findings.errors:
        raise errors.invalid(rt.kind, rt.group, name, findings.errors)
    if not findings.unknown:
        return
    fields = [dotted(p) for p in findings.unknown]
    if field_validation == "Strict":
        raise errors.bad_request(
            f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: strict decoding '
            "error: " + ", ".join(f'unknown field "{f}"' for f in fields)
        )
    drop_fields(obj, findings.unknown)
    if field_validation == "Warn" and warnings is not None:
        warnings.extend(f'unknown field "{f}"' for f in fields)
