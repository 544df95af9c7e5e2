"""The three PATCH flavours the emulator speaks, applied to plain dicts.

* JSON merge patch (RFC 7386, ``application/merge-patch+json``);
* JSON patch (RFC 6902, ``application/json-patch+json``);
* strategic merge patch, the subset kubectl and our code use: lists of known fields
  merge by key (``containers``/``initContainers``/``volumes``/``env``/
  ``imagePullSecrets`` by ``name``, ``volumeMounts`` by ``mountPath``, ``ports`` by
  ``containerPort`` or ``port``, ``conditions`` by ``type``, ``ownerReferences`` by
  ``uid``), ``finalizers`` merge as a set, ``$patch: delete``/``replace`` directives,
  ``$deleteFromPrimitiveList/<field>``; ``$setElementOrder``/``$retainKeys`` are
  accepted and ignored. Other lists are replaced, as for untagged upstream fields.
"""

from __future__ import annotations

from typing import Any

from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.errors import ApiError, bad_request
from tenantflow.lab.kubeapi.media_types import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH

PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

LIST_MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
}
PRIMITIVE_SET_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_key(field: str, items: list[Any]) -> str | None:
    for key in LIST_MERGE_KEYS.get(field, ()):
        if any(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    base = list(current) if isinstance(current, list) else []
    if field in PRIMITIVE_SET_LISTS:
        return base + [v for v in patch if v not in base]
    key = _merge_key(field, base + patch)
    if key is None:
        return [strategic_merge(None, v) if isinstance(v, dict) else v for v in patch]
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: {field} items must be objects")
        index = next((i for i, cur in enumerate(base) if isinstance(cur, dict) and cur.get(key) == item.get(key)), None)
        directive = item.get("$patch")
        if directive == "delete":
            if index is not None:
                base.pop(index)
        elif directive == "replace" or index is None:
            base.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            base[index] = strategic_merge(base[index], item)
    return base


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    if patch.get("$patch") == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"json patch: invalid path {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def _json_patch_op(doc: Any, op: dict[str, Any]) -> Any:
    kind, parts = op.get("op"), _pointer(op.get("path", ""))
    if kind in ("move", "copy"):
        value = clone(_resolve(doc, _pointer(op["from"])))
        if kind == "move":
            doc = _json_patch_op(doc, {"op": "remove", "path": op["from"]})
        return _json_patch_op(doc, {"op": "add", "path": op["path"], "value": value})
    if kind == "test":
        if _resolve(doc, parts) != op.get("value"):
            raise ApiError(422, "Invalid", f"json patch test operation failed at {op.get('path')}")
        return doc
    if not parts:
        return clone(op.get("value")) if kind in ("add", "replace") else None
    parent, last = _resolve(doc, parts[:-1]), parts[-1]
    if kind == "add":
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), clone(op["value"]))
        else:
            parent[last] = clone(op["value"])
    elif kind == "replace":
        _resolve(doc, parts)
        parent[int(last) if isinstance(parent, list) else last] = clone(op["value"])
    elif kind == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    else:
        raise bad_request(f"json patch: unknown op {kind!r}")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch: body must be a list of operations")
    doc = clone(target)
    for op in ops:
        try:
            doc = _json_patch_op(doc, op)
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(
                422, "Invalid", f"json patch: cannot apply {op.get('op')} at {op.get('path')!r}: {exc!r}"
            ) from exc
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> Any:
    """Apply a PATCH body of the given media type to ``target`` (not modified)."""
    media = content_type.split(";")[0].strip()
    if media == JSON_PATCH:
        return json_patch(target, patch)
    if media == MERGE_PATCH:
        return merge_patch(target, patch)
    if media == STRATEGIC_MERGE_PATCH:
        return strategic_merge(clone(target), patch)
    raise unsupported_patch()


def unsupported_patch() -> ApiError:
    """415 for a PATCH body of a media type the apiserver does not take."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(PATCH_TYPES),
    )
