"""Decode the protobuf bodies kubectl's typed clients send, for the kinds its imperative commands create.

kubectl posts built-in objects as ``application/vnd.kubernetes.protobuf``: the
magic ``k8s\\0``, then a ``runtime.Unknown`` (``typeMeta`` = 1, ``raw`` = 2) whose
``raw`` holds the object. :data:`SCHEMAS` gives, per kind, the field numbers of
``k8s.io/api`` (generated.proto) that ``kubectl create namespace|configmap|secret|
serviceaccount`` and ``kubectl auth can-i`` fill in; the decoded object is the
JSON form the server handles. Any other kind is refused with 415 naming the
kinds understood, so a test meets a clear limit rather than a wrong object.
The answer always goes back as JSON, which kubectl accepts.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, TypeAlias

MAGIC = b"k8s\x00"

Field: TypeAlias = str | tuple[str, "Schema"]
"""A leaf kind (``string``, ``bool``, ``strings``, ``map``, ``bytesmap``), ``("message",
schema)`` for a nested message or ``("messages", schema)`` for a repeated one."""
Schema: TypeAlias = Mapping[int, tuple[str, Field]]

OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    14: ("finalizers", "strings"),
}
META = ("metadata", ("message", OBJECT_META))
LOCAL_REF: Schema = {1: ("name", "string")}
OBJECT_REF: Schema = {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string")}

SCHEMAS: dict[str, tuple[str, Schema]] = {
    "Namespace": ("v1", {1: META, 2: ("spec", ("message", {1: ("finalizers", "strings")}))}),
    "ConfigMap": ("v1", {1: META, 2: ("data", "map"), 3: ("binaryData", "bytesmap"), 4: ("immutable", "bool")}),
    "Secret": (
        "v1",
        {1: META, 2: ("data", "bytesmap"), 3: ("type", "string"), 4: ("stringData", "map"), 5: ("immutable", "bool")},
    ),
    "ServiceAccount": (
        "v1",
        {
            1: META,
            2: ("secrets", ("messages", OBJECT_REF)),
            3: ("imagePullSecrets", ("messages", LOCAL_REF)),
            4: ("automountServiceAccountToken", "bool"),
        },
    ),
    "SelfSubjectAccessReview": (
        "authorization.k8s.io/v1",
        {
            1: META,
            2: (
                "spec",
                (
                    "message",
                    {
                        1: (
                            "resourceAttributes",
                            (
                                "message",
                                {
                                    1: ("namespace", "string"),
                                    2: ("verb", "string"),
                                    3: ("group", "string"),
                                    4: ("version", "string"),
                                    5: ("resource", "string"),
                                    6: ("subresource", "string"),
                                    7: ("name", "string"),
                                },
                            ),
                        ),
                        2: ("nonResourceAttributes", ("message", {1: ("path", "string"), 2: ("verb", "string")})),
                    },
                ),
            ),
        },
    ),
}


class UnsupportedKind(ValueError):
    """A well-formed envelope holding a kind :data:`SCHEMAS` does not describe."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> list[tuple[int, bytes | int]]:
    """Every field of a message in wire order (repeated fields repeat), skipping fixed-width ones."""
    out: list[tuple[int, bytes | int]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated protobuf message")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def _entry(value: bytes) -> tuple[str, bytes]:
    found = dict(fields(value))
    key, item = found.get(1, b""), found.get(2, b"")
    return (key.decode() if isinstance(key, bytes) else "", item if isinstance(item, bytes) else b"")


def decode(data: bytes, schema: Schema) -> dict[str, Any]:
    """The JSON form of a message described by ``schema`` (unknown field numbers are ignored)."""
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, tuple):
            nested, sub = kind
            message = decode(value, sub) if isinstance(value, bytes) else {}
            if nested == "messages":
                out.setdefault(name, []).append(message)
            else:
                out[name] = message
        elif kind == "bool":
            out[name] = bool(value)
        elif not isinstance(value, bytes):
            raise ValueError(f"field {name} should be length-delimited")
        elif kind == "strings":
            out.setdefault(name, []).append(value.decode())
        elif kind in ("map", "bytesmap"):
            key, item = _entry(value)
            out.setdefault(name, {})[key] = item.decode() if kind == "map" else base64.b64encode(item).decode()
        elif value:  # an empty string is Go's zero value, which the JSON form omits
            out[name] = value.decode()
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of one of the :data:`SCHEMAS` kinds."""
    if not body.startswith(MAGIC):
        raise ValueError("not a kubernetes protobuf envelope (no k8s\\0 magic)")
    unknown = dict(fields(body[len(MAGIC) :]))
    type_meta = unknown.get(1, b"")
    meta = decode(
        type_meta if isinstance(type_meta, bytes) else b"", {1: ("apiVersion", "string"), 2: ("kind", "string")}
    )
    kind = meta.get("kind", "")
    if kind not in SCHEMAS:
        raise UnsupportedKind(
            f"the lab decodes protobuf bodies of {', '.join(sorted(SCHEMAS))} only, not "
            f"{kind or 'an untyped body'}; send JSON or YAML (kubectl apply -f) instead"
        )
    api_version, schema = SCHEMAS[kind]
    raw = unknown.get(2, b"")
    obj = decode(raw if isinstance(raw, bytes) else b"", schema)
    return {"apiVersion": meta.get("apiVersion") or api_version, "kind": kind, "metadata": {}, **obj}
