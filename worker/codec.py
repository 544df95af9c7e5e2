"""Encrypting payload codec (AES-256-GCM) with key rotation, and the remote-codec HTTP endpoint for the Temporal UI.

Keys come from a key file (``TENANTFLOW_CODEC_KEY_FILE``) or from the
environment (``TENANTFLOW_CODEC_KEYS``): one ``KEY_ID:BASE64_KEY`` entry per line
(file) or per comma (env), 32-byte keys, oldest first. The newest key encrypts;
any known key decrypts, chosen by the key id stored in the payload metadata, so a
key is rotated by appending a new one and dropping the old one only after every
history written with it has been closed.

An encrypted payload has ``encoding: binary/encrypted`` and
``encryption-key-id: <id>``; its data is a 12-byte nonce followed by the AES-GCM
ciphertext of the serialized original payload, authenticated together with the
key id. A tampered or foreign payload is refused, never passed through, and so is a plaintext payload:
when encryption is configured it is required (``TENANTFLOW_CODEC_ALLOW_PLAINTEXT=true`` lets a deployment
read the plaintext histories it wrote before it turned encryption on, and nothing else).

``codec_app`` serves Temporal's remote codec protocol (``POST /encode`` and
``POST /decode`` with ``{"payloads": [...]}`` in protobuf JSON), with CORS for
the UI's origin: run it with ``tenantflow codec-server`` and start the UI with
``--ui-codec-endpoint``. Every request but a CORS preflight needs a bearer token of the per-user token file
(:mod:`worker.tokens`; the UI sends it with ``--ui-codec-pass-access-token`` or from its auth provider): without
one the server answers 401, so the endpoint never decrypts for an anonymous caller.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aiohttp import web
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import DataConverter, PayloadCodec

from tenantflow.models.content_types import JSON
from tenantflow.worker.converter import ExplainingPayloadConverter
from tenantflow.worker.tokens import TokenTable, bearer_auth

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
KEYS_ENV = "TENANTFLOW_CODEC_KEYS"
NONCE_BYTES = 12
KEY_ID_FORMAT = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class CodecError(ValueError):
    """A payload that cannot be decrypted (unknown key id, tampered, truncated) or a malformed key."""


@dataclass(frozen=True)
class KeyRing:
    """Named AES-256 keys, oldest first; the last one encrypts."""

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise CodecError("the codec key ring is empty")
        for key_id, key in self.keys:
            if not KEY_ID_FORMAT.match(key_id):
                raise CodecError(f"codec key id {key_id!r} must match {KEY_ID_FORMAT.pattern}")
            if len(key) != 32:
                raise CodecError(f"codec key {key_id!r} must be 32 bytes (AES-256), not {len(key)}")
        if len({key_id for key_id, _ in self.keys}) != len(self.keys):
            raise CodecError("codec key ids must be unique")

    @property
    def current(self) -> tuple[str, bytes]:
        return self.keys[-1]

    def key(self, key_id: str) -> bytes:
        for known, key in self.keys:
            if known == key_id:
                return key
        raise CodecError(f"payload encrypted with unknown codec key id {key_id!r}")

    @classmethod
    def parse(cls, entries: Sequence[str]) -> KeyRing:
        """``KEY_ID:BASE64_KEY`` entries; blanks and ``#`` comments are skipped."""
        keys: list[tuple[str, bytes]] = []
        for raw in entries:
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            key_id, sep, encoded = entry.partition(":")
            if not sep:
                raise CodecError("codec key entries are KEY_ID:BASE64_KEY")
            try:
                keys.append((key_id.strip(), base64.b64decode(encoded.strip(), validate=True)))
            except binascii.Error:
                raise CodecError(f"codec key {key_id.strip()!r} is not valid base64") from None
        return cls(tuple(keys))

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        return cls.parse(path.read_text().splitlines())

    @classmethod
    def from_env(cls, key_file: Path | None = None) -> KeyRing | None:
        """The key ring from ``key_file`` or ``$TENANTFLOW_CODEC_KEYS``; ``None`` when neither is set."""
        if key_file is not None:
            return cls.load(key_file)
        value = os.environ.get(KEYS_ENV, "")
        return cls.parse(value.split(",")) if value.strip() else None


def new_key_entry(key_id: str) -> str:
    """A fresh ``KEY_ID:BASE64_KEY`` line for a key file."""
    return f"{key_id}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()}"


class EncryptionCodec(PayloadCodec):
    """AES-GCM over whole payloads, with the key id in the metadata; plaintext is refused unless allowed."""

    def __init__(self, ring: KeyRing, allow_plaintext: bool = False) -> None:
        self.ring = ring
        self.allow_plaintext = allow_plaintext

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        key_id, key = self.ring.current
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, payload.SerializeToString(), key_id.encode())
        return Payload(metadata={"encoding": ENCODING, KEY_ID: key_id.encode()}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            if self.allow_plaintext:
                return payload
            raise CodecError(
                "plaintext payload refused: encryption is required (the sender has no codec key; "
                "set TENANTFLOW_CODEC_KEY_FILE on it, or TENANTFLOW_CODEC_ALLOW_PLAINTEXT=true here "
                "while old plaintext histories are still open)"
            )
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        key = self.ring.key(key_id)
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = AESGCM(key).decrypt(nonce, sealed, key_id.encode())
        except InvalidTag:
            raise CodecError(
                f"payload encrypted with key {key_id!r} failed authentication (tampered, truncated or wrong key)"
            ) from None
        original = Payload()
        original.ParseFromString(plain)
        return original


PLAIN = DataConverter(payload_converter_class=ExplainingPayloadConverter)
"""The project's pydantic converter, unencrypted (no key ring configured; tests and replay)."""


def data_converter(ring: KeyRing | None, allow_plaintext: bool = False) -> DataConverter:
    """The project's pydantic converter, encrypting (and requiring encryption) when a key ring is configured."""
    if ring is None:
        return PLAIN
    return replace(PLAIN, payload_codec=EncryptionCodec(ring, allow_plaintext))


def codec_app(codec: PayloadCodec, cors_origins: Sequence[str], tokens: TokenTable) -> web.Application:
    """Temporal's remote codec protocol: ``POST /encode`` and ``POST /decode`` for a caller with a token of
    ``tokens``, with CORS for ``cors_origins`` (also on a 401, so the UI can show it)."""
    allowed = set(cors_origins)

    async def cors(request: web.Request, response: web.StreamResponse) -> None:
        origin = request.headers.get("Origin", "")
        if origin in allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            response.headers["Access-Control-Allow-Headers"] = "Content-Type, X-Namespace, Authorization"
            response.headers["Access-Control-Allow-Credentials"] = "true"
            response.headers["Vary"] = "Origin"

    def handler(encode: bool) -> web.RouteDef:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                payloads = json_format.Parse(await request.text(), Payloads())
                converted = await (codec.encode if encode else codec.decode)(payloads.payloads)
            except (json_format.ParseError, CodecError) as exc:
                return web.json_response({"error": str(exc)}, status=400)
            body = json_format.MessageToJson(Payloads(payloads=converted))
            return web.Response(text=body, content_type=JSON)

        return web.post("/encode" if encode else "/decode", handle)

    async def preflight(request: web.Request) -> web.StreamResponse:
        return web.Response(status=200 if request.headers.get("Origin") in allowed else 403)

    app = web.Application(client_max_size=16 * 2**20, middlewares=[bearer_auth(tokens)])
    app.on_response_prepare.append(cors)
    app.add_routes([handler(True), handler(False), web.options("/{tail:.*}", preflight)])
    return app
