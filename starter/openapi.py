"""The HTTP API's route table and the OpenAPI document generated from it.

A :class:`Route` names its method, its aiohttp path, its handler (whose docstring is the operation's summary and
description), the pydantic models of its path and query parameters and of its request body, and each answer's
status with its model, and the role a token needs for it over its target (:mod:`starter.api_auth`).
:func:`register` adds the routes to an aiohttp app, refusing parameters their model refuses (422, naming them) and
a token without the role (403) before the handler runs; :func:`openapi_document` builds the OpenAPI 3.1 document
(https://spec.openapis.org/oas/v3.1.0) from the same table: its schemas are the JSON Schema 2020-12 pydantic
generates for the models, so the document cannot drift from what the handlers validate.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from inspect import cleandoc
from typing import Any

from aiohttp import web
from pydantic import BaseModel, TypeAdapter, ValidationError

from tenantflow.models.api import Problem
from tenantflow.models.content_types import JSON
from tenantflow.starter.api_auth import authorize
from tenantflow.starter.problems import invalid
from tenantflow.worker.targets import Target
from tenantflow.worker.tokens import Role

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PATH_KEY: web.RequestKey[BaseModel] = web.RequestKey("path", BaseModel)
QUERY_KEY: web.RequestKey[BaseModel] = web.RequestKey("query", BaseModel)
REF_TEMPLATE = "#/components/schemas/{model}"
SECURITY_SCHEME = "bearer"


BODY_LIMIT = 2**20
"""The largest request body the API reads (aiohttp's ``client_max_size``, whose default it is); a larger one is
refused with 413 before any handler runs."""


@dataclass(frozen=True)
class Reply:
    """One documented answer: why it comes, and the type of its JSON body (None: no body)."""

    description: str
    body: Any = Problem


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    """The aiohttp path; a parameter may carry a regex (``{id:.+}``), which the document leaves out."""
    handler: Handler
    replies: Mapping[int, Reply]
    body: Any = None
    """The type of the JSON request body (a model, or a union of models); None: the route reads none."""
    body_required: bool = True
    path_params: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    role: Role | None = field(kw_only=True)
    """The role a token needs (:mod:`starter.api_auth`); None: any known token."""
    target: Callable[[Any], Target] | None = None
    """What the route acts on, from its validated path parameters; None: the role over any target (a handler
    whose target is in the body checks it once the body is read, a list filters its rows)."""

    @property
    def openapi_path(self) -> str:
        return re.sub(r"\{(\w+):[^{}]+\}", r"{\1}", self.path)

    def answers(self) -> dict[int, Reply]:
        """Its replies and those every route of its kind may give: a body or parameters their model refuses
        (400 for a body that is no JSON, 413 for one over :data:`BODY_LIMIT`, 422), a missing or unknown token
        (401), a token without the route's role (403), a token file that is invalid since its last change (503)."""
        common: dict[int, Reply] = {}
        if self.body is not None:
            common[400] = Reply("the body is not JSON, or not a JSON object")
            common[413] = Reply(f"the body is over {BODY_LIMIT // 2**20} MiB")
        if self.body is not None or self.path_params is not None or self.query is not None:
            common[422] = Reply("a field of the body, path or query is invalid: `fields` names each one")
        common[401] = Reply("no `Authorization: Bearer TOKEN` header with a known token")
        if self.role is not None:
            common[403] = Reply(f"the token has no {self.role} role (or admin) for the tenant or worker cluster")
        common[503] = Reply("the token file is invalid since its last change (the message names the line and fix)")
        own = dict(self.replies)
        if 403 in common and 403 in own:
            own[403] = Reply(f"{common[403].description}; or {own[403].description}", own[403].body)
        return {**common, **own}


def validated(model: type[BaseModel], values: Mapping[str, str], source: str) -> BaseModel:
    """``values`` as ``model``; a 422 naming every field it refuses."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise invalid(source, exc) from None


def checked(route: Route) -> Handler:
    """The route's handler behind the validation of its path and query parameters and the check of its role."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if route.path_params is not None:
            request[PATH_KEY] = validated(route.path_params, request.match_info, "path")
        if route.query is not None:
            request[QUERY_KEY] = validated(route.query, request.query, "query")
        if route.role is not None:
            authorize(request, route.role, route.target(request[PATH_KEY]) if route.target is not None else None)
        return await route.handler(request)

    return handle


def register(app: web.Application, routes: Sequence[Route]) -> None:
    """Add ``routes`` to ``app`` in order (aiohttp matches the first that fits: specific paths go first)."""
    for route in routes:
        app.router.add_route(route.method, route.path, checked(route), name=route.handler.__name__)


def parameters(
    model: type[BaseModel] | None, where: str, definitions: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The OpenAPI parameter objects of ``model``'s fields (each a scalar), ``where`` ``path`` or ``query``; the
    model's own schema is found in ``definitions``."""
    if model is None:
        return []
    schema = definitions[model.__name__]
    required = set(schema.get("required", []))
    return [
        {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "description": prop.get("description", ""),
            "schema": _not_null({key: value for key, value in prop.items() if key not in ("title", "description")}),
        }
        for name, prop in schema["properties"].items()
    ]


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema without pydantic's ``null`` alternative of an optional field: a path or query string
    cannot carry JSON null (leaving the parameter out says "none"), so ``?stage=null`` is the string ``null``."""
    options = [option for option in schema.get("anyOf", []) if option != {"type": "null"}]
    if len(options) != 1:
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf" and (key, value) != ("default", None)}
    return {**options[0], **rest}


def openapi_document(routes: Sequence[Route], title: str, version: str, description: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``: every path, parameter, request body and answer, with the schemas of
    their models under ``components.schemas``."""
    inputs: list[tuple[tuple[str, int], Any, TypeAdapter[Any]]] = []
    for index, route in enumerate(routes):
        for model in (route.path_params, route.query):
            if model is not None:
                inputs.append(((model.__name__, -1), "validation", TypeAdapter(model)))
        if route.body is not None:
            inputs.append(((str(index), 0), "validation", TypeAdapter(route.body)))
        for status, reply in route.answers().items():
            if reply.body is not None:
                inputs.append(((str(index), status), "serialization", TypeAdapter(reply.body)))
    schemas, definitions = TypeAdapter.json_schemas(inputs, ref_template=REF_TEMPLATE)
    schema_of = {key: value for (key, _mode), value in schemas.items()}
    components = definitions.get("$defs", {})
    paths: dict[str, dict[str, Any]] = {}
    for index, route in enumerate(routes):
        doc = cleandoc(route.handler.__doc__ or route.handler.__name__)
        summary, _, details = doc.partition("\n")
        operation: dict[str, Any] = {
            "operationId": route.handler.__name__,
            "summary": summary,
            "description": details.strip(),
            **({"x-required-role": str(route.role)} if route.role is not None else {}),
            "parameters": parameters(route.path_params, "path", components)
            + parameters(route.query, "query", components),
            "responses": {
                str(status): {
                    "description": reply.description,
                    **(
                        {"content": {JSON: {"schema": schema_of[(str(index), status)]}}}
                        if reply.body is not None
                        else {}
                    ),
                }
                for status, reply in sorted(route.answers().items())
            },
        }
        if route.body is not None:
            operation["requestBody"] = {
                "required": route.body_required,
                "content": {JSON: {"schema": schema_of[(str(index), 0)]}},
            }
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "security": [{SECURITY_SCHEME: []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {SECURITY_SCHEME: {"type": "http", "scheme": "bearer"}},
        },
    }
