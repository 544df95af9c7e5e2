"""Encrypting payload codec (AES-256-GCM) with key rotation; :mod:`worker.codec_server` serves it to the Temporal UI.

Keys come from a key file (``TENANTFLOW_CODEC_KEY_FILE``) or from the
environment (``TENANTFLOW_CODEC_KEYS``): one ``KEY_ID:BASE64_KEY`` entry per line
(file) or per comma (env), 32-byte keys, oldest first. The newest key encrypts;
any known key decrypts, chosen by the key id stored in the payload metadata, so a
key is rotated by appending a new one and dropping the old one only after every
history written with it has been closed.

An encrypted payload has ``encoding: binary/encrypted`` and
``encryption-key-id: <id>``; its data is a 12-byte nonce followed by the AES-GCM
ciphertext of the serialized original payload. A payload sealed for a workflow (the SDK gives the codec the
namespace and workflow id of every workflow input, result, signal, update, query, memo and activity argument:
its serialization context, https://python.temporal.io/temporalio.converter.WithSerializationContext.html) also
carries ``encryption-binding: ["<namespace>", "<workflow id>"]``, and the ciphertext is authenticated together
with the key id and that binding (its associated data): decoded for another workflow (an approval of one run
copied into another) it is refused, and a binding changed or removed fails authentication. A payload sealed
without a context (by the codec server for the UI, or before the binding existed) is bound to the key id alone.
A tampered or foreign payload is refused, never passed through, and so is a plaintext payload: when encryption
is configured it is required (``TENANTFLOW_CODEC_ALLOW_PLAINTEXT=true`` lets a deployment read the plaintext
histories it wrote before it turned encryption on, and nothing else). ``TENANTFLOW_REQUIRE_ENCRYPTION=true``
makes a process without keys refuse to start (:func:`data_converter`) rather than run in plaintext.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec, SerializationContext, WithSerializationContext

from tenantflow.worker.converter import ExplainingPayloadConverter

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
BINDING = "encryption-binding"
KEYS_ENV = "TENANTFLOW_CODEC_KEYS"
REQUIRE_ENV = "TENANTFLOW_REQUIRE_ENCRYPTION"
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


class EncryptionRequired(CodecError):
    """Encryption is required (``TENANTFLOW_REQUIRE_ENCRYPTION``) and no key is configured."""


Binding = tuple[str, str]
"""The namespace and workflow id a payload is sealed for."""


def parse_binding(binding: bytes) -> tuple[str, ...]:
    """The namespace and workflow id of an ``encryption-binding`` value (empty when it is not one)."""
    try:
        value = json.loads(binding)
    except ValueError:
        return ()
    return tuple(value) if isinstance(value, list) and all(isinstance(part, str) for part in value) else ()


def associated_data(key_id: str, binding: bytes | None) -> bytes:
    """What AES-GCM authenticates with the ciphertext: the key id, and the binding when there is one."""
    return key_id.encode() if binding is None else key_id.encode() + b"\0" + binding


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """AES-GCM over whole payloads, with the key id (and the workflow the payload belongs to) in the metadata and
    the associated data; plaintext is refused unless allowed."""

    def __init__(self, ring: KeyRing, allow_plaintext: bool = False, binding: Binding | None = None) -> None:
        self.ring = ring
        self.allow_plaintext = allow_plaintext
        self.binding = binding
        """The namespace and workflow id this codec seals for and accepts (None: no serialization context)."""

    def with_context(self, context: SerializationContext) -> EncryptionCodec:
        namespace, workflow_id = getattr(context, "namespace", None), getattr(context, "workflow_id", None)
        binding = (namespace, workflow_id) if namespace and workflow_id else None
        return EncryptionCodec(self.ring, self.allow_plaintext, binding)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        key_id, key = self.ring.current
        nonce = os.urandom(NONCE_BYTES)
        metadata = {"encoding": ENCODING, KEY_ID: key_id.encode()}
        binding = json.dumps(list(self.binding)).encode() if self.binding else None
        if binding is not None:
            metadata[BINDING] = binding
        sealed = AESGCM(key).encrypt(nonce, payload.SerializeToString(), associated_data(key_id, binding))
        return Payload(metadata=metadata, data=nonce + sealed)

    def check_binding(self, binding: bytes | None) -> None:
        """Refuse a payload sealed for another workflow than the one this codec decodes for."""
        if binding is None or self.binding is None:
            return
        sealed_for = parse_binding(binding)
        if sealed_for != self.binding:
            raise CodecError(
                f"payload sealed for {sealed_for!r} refused in workflow {self.binding[1]!r} of namespace "
                f"{self.binding[0]!r}: an encrypted payload is valid only for the workflow it was written for"
            )

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
        binding = payload.metadata.get(BINDING, None)
        self.check_binding(binding)
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = AESGCM(key).decrypt(nonce, sealed, associated_data(key_id, binding))
        except InvalidTag:
            raise CodecError(
                f"payload encrypted with key {key_id!r} failed authentication (tampered, truncated or wrong key)"
            ) from None
        original = Payload()
        original.ParseFromString(plain)
        return original


PLAIN = DataConverter(payload_converter_class=ExplainingPayloadConverter)
"""The project's pydantic converter, unencrypted (no key ring configured; tests and replay)."""


def data_converter(ring: KeyRing | None, allow_plaintext: bool = False, require: bool = False) -> DataConverter:
    """The project's pydantic converter, encrypting (and requiring encryption) when a key ring is configured;
    without one, plaintext, unless ``require`` (``TENANTFLOW_REQUIRE_ENCRYPTION``) refuses that."""
    if ring is None:
        if require:
            raise EncryptionRequired(
                f"{REQUIRE_ENV}=true but no codec key is configured: set TENANTFLOW_CODEC_KEY_FILE (or {KEYS_ENV}), "
                f"or unset {REQUIRE_ENV} to run with plaintext payloads"
            )
        return PLAIN
    return replace(PLAIN, payload_codec=EncryptionCodec(ring, allow_plaintext))
