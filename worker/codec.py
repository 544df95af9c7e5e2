"""Encrypting payload codec (AES-256-GCM) with key rotation, and the remote-codec HTTP endpoint for the Temporal UI.

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

``codec_app`` serves Temporal's remote codec protocol (``POST /encode`` and
``POST /decode`` with ``{"payloads": [...]}`` in protobuf JSON), with CORS for
the UI's origin: run it with ``tenantflow codec-server`` and start the UI with
``--ui-codec-endpoint``. Every request but a CORS preflight needs a bearer token of the per-user token file
(:mod:`worker.tokens`, read again on every request; the UI sends it with ``--ui-codec-pass-access-token`` or from
its auth provider): without one the server answers 401, so the endpoint never decrypts for an anonymous caller.
The token's roles (:mod:`worker.targets`) decide the rest, with 403 naming the role and the fix:

- ``/decode`` needs a role (viewer or more) over the target each payload is sealed for: the tenant or worker
  cluster its binding's workflow id names (``tenant/<slug>``: the tenant ``<slug>``), else that run, which only
  ``*`` covers; a payload sealed for no workflow (by ``/encode``, or before the binding existed) may belong to
  any, so only ``*`` covers it. A viewer of ``tenant-a*`` reads tenant-a's payloads in the UI and no other's.
- ``/encode`` needs requester (or admin) over ``*``: what it seals is bound to no workflow and valid in any.
  Even then it refuses (403) a payload that is a gate answer (:func:`is_gate_answer`): a token holder cannot
  mint an encrypted approval through it; gates are answered with ``tenantflow`` or the HTTP API, which sign them.
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

from aiohttp import web
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import DataConverter, PayloadCodec, SerializationContext, WithSerializationContext

from tenantflow.models.content_types import JSON
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
from tenantflow.models.lifecycle import RenewTerm
from tenantflow.worker.converter import ExplainingPayloadConverter
from tenantflow.worker.targets import Target, allowed, target_of_run
from tenantflow.worker.tokens import GRANTS_KEY, USER_KEY, Role, TokenSource, bearer_auth

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


def gate_payloads() -> list[type[BaseModel]]:
    """Every payload model a gate is answered with: the plan's, the renewal's, :class:`GateAnswer` and each of its
    subclasses (``SmokeFailedAnswer``), so that a new kind of answer is covered without a list to keep."""
    found: list[type[BaseModel]] = [ApprovePlan, RejectPlan, RenewTerm]
    pending: list[type[BaseModel]] = [GateAnswer]
    while pending:
        model = pending.pop()
        found.append(model)
        pending.extend(model.__subclasses__())
    return found


def is_gate_answer(payload: Payload) -> bool:
    """Whether ``payload`` is, or is shaped like, a gate answer: a JSON object whose keys are all fields of one gate
    payload model. Shape, not validity: an answer the run would refuse today (a waiver without a reason) is still
    not sealed, and a model's validators cannot let one through."""
    if payload.metadata.get("encoding") != b"json/plain":
        return False
    try:
        value = json.loads(payload.data)
    except ValueError:
        return False
    if not isinstance(value, dict):
        return False
    return any(set(value) <= set(model.model_fields) for model in gate_payloads())


GATE_ANSWER_REFUSED = (
    "the codec server does not encrypt gate answers: answer gates with `tenantflow approve` (or the gate's "
    "command) or through the HTTP API, which sign them for the worker to verify"
)
UNBOUND = Target("run", "of any workflow")
"""What a payload sealed for no workflow may belong to: only the pattern ``*`` covers it."""


def sealed_target(payload: Payload) -> Target | None:
    """Whose payload ``payload`` is: the tenant or worker cluster of the workflow it is sealed for (the run itself
    for another workflow id), :data:`UNBOUND` when it is sealed for none; None when it is not encrypted."""
    if payload.metadata.get("encoding") != ENCODING:
        return None
    binding = payload.metadata.get(BINDING)
    sealed_for = parse_binding(binding) if binding is not None else ()
    return target_of_run(sealed_for[1]) if len(sealed_for) == 2 else UNBOUND


def role_refusal(request: web.Request, payloads: Sequence[Payload], encode: bool) -> str | None:
    """Why the request's token may not have ``payloads`` encoded (requester over every target: what the server
    seals is bound to no workflow, so valid in any) or decoded (viewer over the target each is sealed for); None
    when it may."""
    user, grants = request[USER_KEY], request[GRANTS_KEY]
    has = f"{user}'s token grants {' '.join(map(str, grants))}"
    if encode:
        if not payloads or allowed(grants, Role.requester, UNBOUND):
            return None
        return (
            "/encode seals payloads for no workflow, valid in any workflow of the namespace, so it needs the "
            f"requester role (or admin) over every target: {has}; add requester:* to {user}'s line of the token file"
        )
    for payload in payloads:
        target = sealed_target(payload)
        if target is None or allowed(grants, Role.viewer, target):
            continue
        if target is UNBOUND:
            return (
                "a payload sealed for no workflow (by /encode, or before payloads were bound to their workflow) may "
                f"belong to any, so decoding it needs a role over every target (viewer:*): {has}"
            )
        pattern = "*" if target.kind == "run" else target.name
        return (
            f"decoding a payload of {target} needs a role over it (viewer or more): {has}; add viewer:{pattern} "
            f"(or a pattern matching it) to {user}'s line of the token file"
        )
    return None


def codec_app(codec: PayloadCodec, cors_origins: Sequence[str], tokens: TokenSource) -> web.Application:
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
                refusal = role_refusal(request, payloads.payloads, encode)
                if refusal is not None:
                    return web.json_response({"error": refusal}, status=403)
                if encode and any(is_gate_answer(p) for p in payloads.payloads):
                    return web.json_response({"error": GATE_ANSWER_REFUSED}, status=403)
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
