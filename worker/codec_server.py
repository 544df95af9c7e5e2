"""The remote-codec HTTP endpoint for the Temporal UI, over the codec of :mod:`worker.codec`.

``codec_app`` serves Temporal's remote codec protocol (``POST /encode`` and ``POST /decode`` with
``{"payloads": [...]}`` in protobuf JSON), with CORS for the UI's origin: run it with ``tenantflow codec-server``
and start the UI with ``--ui-codec-endpoint``. Every request but a CORS preflight needs a bearer token of the
per-user token file (:mod:`worker.tokens`, checked by :mod:`worker.bearer` and read again on every request; the UI
sends it with ``--ui-codec-pass-access-token`` or from its auth provider): without one the server answers 401, so
the endpoint never decrypts for an anonymous caller.
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

import json
from collections.abc import Sequence

from aiohttp import web
from google.protobuf import json_format
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from tenantflow.models.content_types import JSON
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
from tenantflow.models.lifecycle import RenewTerm
from tenantflow.worker.bearer import GRANTS_KEY, USER_KEY, bearer_auth
from tenantflow.worker.codec import BINDING, ENCODING, CodecError, parse_binding
from tenantflow.worker.targets import Target, allowed, target_of_run
from tenantflow.worker.tokens import Role, TokenSource


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
