"""How the HTTP API refuses: every refusal is a JSON :class:`~models.api.Problem` naming the problem, its fix and
the fields concerned, never a traceback or a bare status line.

Handlers raise :class:`ApiProblem` (or the starter's own errors); :func:`problems`, the app's outermost middleware,
turns those, aiohttp's own HTTP errors (no such route, a method not allowed, a body over the size limit) and
Temporal's refusals into the answer: 404 for a run Temporal does not know, 409 for a run that refuses (an update's
validator, a run already in progress), 502 when Temporal itself fails.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ValidationError
from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.models.api import Problem
from tenantflow.models.explain import field_path, format_validation_error
from tenantflow.starter.client import RunAlreadyActive
from tenantflow.starter.contracts import ContractError

T = TypeVar("T")

SCHEMA_HINT = "GET /openapi.json describes every route and body"
TEMPORAL_STATUS = {
    RPCStatusCode.NOT_FOUND: 404,
    RPCStatusCode.INVALID_ARGUMENT: 400,
    RPCStatusCode.ALREADY_EXISTS: 409,
    RPCStatusCode.FAILED_PRECONDITION: 409,
}
"""The answer to each refusal of Temporal's that the request caused; any other is Temporal failing (502)."""


class ApiProblem(Exception):
    """A refusal: the HTTP status, the message (the problem and its fix) and the fields it is about."""

    def __init__(self, status: int, message: str, fields: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.problem = Problem(error=message, fields=list(fields))

    def response(self) -> web.Response:
        return web.json_response(text=self.problem.model_dump_json(), status=self.status)


def invalid(source: str, exc: ValidationError) -> ApiProblem:
    """422 for what ``exc`` refuses in ``source`` (the body, the path, the query): one line per field and fix."""
    fields = [field_path(error["loc"]) for error in exc.errors() if error["loc"]]
    return ApiProblem(422, format_validation_error(source, exc), fields)


async def or_404(pending: Awaitable[T], missing: str) -> T:
    """What ``pending`` answers; 404 saying ``missing`` (what is gone and what to send instead) when Temporal knows
    no such run."""
    try:
        return await pending
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise ApiProblem(404, missing) from None


def not_json(constant: str) -> None:
    """Python's parser takes ``NaN`` and ``Infinity``; JSON (RFC 8259) has no such numbers."""
    raise ValueError(f"{constant} is not a JSON number")


async def json_object(request: web.Request) -> dict[str, Any]:
    """The request's body as a JSON object (``{}`` when it has none); 400 naming what is wrong otherwise."""
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw, parse_constant=not_json)
    except (ValueError, RecursionError) as exc:
        raise ApiProblem(400, f"request body: not JSON ({exc}); send a JSON object ({SCHEMA_HINT})") from None
    if not isinstance(data, dict):
        raise ApiProblem(400, f"request body: expected a JSON object, not {type(data).__name__}; {SCHEMA_HINT}")
    return data


def refusal(exc: Exception) -> str:
    """The run's own words for a refused update or query, not the SDK's wrapper text."""
    cause = getattr(exc, "cause", None)
    return str(getattr(cause, "message", None) or cause or exc)


def http_error(request: web.Request, exc: web.HTTPException) -> ApiProblem:
    """aiohttp's own refusal (the router's, the body size limit's) as a problem saying what to do instead."""
    if isinstance(exc, web.HTTPNotFound):
        return ApiProblem(404, f"no route {request.method} {request.path}; {SCHEMA_HINT}")
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        return ApiProblem(405, f"{request.method} is not allowed on {request.path} (allowed: {allowed})")
    return ApiProblem(exc.status, f"{exc.reason}: {exc.text or ''}".rstrip(": "))


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def problems(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every refusal as a JSON problem (see the module's docstring)."""
    try:
        return await handler(request)
    except ApiProblem as exc:
        return exc.response()
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return http_error(request, exc).response()
    except ContractError as exc:
        return ApiProblem(422, str(exc), exc.fields).response()
    except RunAlreadyActive as exc:
        return ApiProblem(409, str(exc)).response()
    except (WorkflowUpdateFailedError, WorkflowQueryFailedError) as exc:
        return ApiProblem(409, f"refused: {refusal(exc)}").response()
    except RPCError as exc:
        status = TEMPORAL_STATUS.get(exc.status, 502)
        return ApiProblem(status, f"temporal: {exc.message or exc.status.name}").response()
