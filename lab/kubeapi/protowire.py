"""Decode the one protobuf body kubectl sends: a SelfSubjectAccessReview (``auth can-i``).

kubectl's typed clientset posts ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\0``, then a ``runtime.Unknown`` whose ``raw`` field holds the review. Only
length-delimited and varint fields are needed; the answer goes back as JSON,
which the client accepts.
"""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
RESOURCE_ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
NON_RESOURCE_ATTRIBUTES = ("path", "verb")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> dict[int, bytes | int]:
    """Top-level fields of a message (last one wins), skipping fixed-width ones."""
    out: dict[int, bytes | int] = {}
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            out[number], pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            out[number] = data[pos:pos + length]
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def _strings(message: bytes, names: tuple[str, ...]) -> dict[str, str]:
    found = fields(message)
    return {name: bytes(found[i + 1]).decode() for i, name in enumerate(names)
            if isinstance(found.get(i + 1), bytes)}


def decode_access_review(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded SelfSubjectAccessReview."""
    if not body.startswith(MAGIC):
        raise ValueError("not a kubernetes protobuf envelope")
    raw = fields(body[len(MAGIC):]).get(2, b"")
    spec_bytes = fields(bytes(raw) if isinstance(raw, bytes) else b"").get(2, b"")
    spec = fields(bytes(spec_bytes) if isinstance(spec_bytes, bytes) else b"")
    out: dict[str, Any] = {}
    if isinstance(spec.get(1), bytes):
        out["resourceAttributes"] = _strings(bytes(spec[1]), RESOURCE_ATTRIBUTES)
    if isinstance(spec.get(2), bytes):
        out["nonResourceAttributes"] = _strings(bytes(spec[2]), NON_RESOURCE_ATTRIBUTES)
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {}, "spec": out}
