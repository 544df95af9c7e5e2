"""Helpers for the Authentik tests: a recording httpx hook, a test server on a real socket, and
validation of recorded request/response pairs against Authentik's OpenAPI schema (openapi-core)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from aiohttp import web
from openapi_core import Config, OpenAPI
from openapi_core.templating.responses.exceptions import ResponseNotFound
from openapi_core.testing import MockRequest, MockResponse
from openapi_core.validation.request.exceptions import SecurityValidationError

import tenantflow.lab.authentik

SCHEMA_PATH = Path(tenantflow.lab.authentik.__file__).parent / "schema.yaml"
TOKEN = "lab-admin-token"


def load_spec() -> OpenAPI:
    """Authentik's schema, loaded once per session (it takes seconds)."""
    spec = yaml.load(SCHEMA_PATH.read_text(), Loader=yaml.CSafeLoader)
    return OpenAPI.from_dict(
        spec, config=Config(spec_validator_cls=None, extra_format_validators={"email": _email_or_blank})
    )


def _email_or_blank(value: str) -> bool:
    """Real Authentik returns ``"email": ""``, which the schema's ``format: email`` would reject."""
    return value == "" or "@" in value


@dataclass
class Exchange:
    request: httpx.Request
    response: httpx.Response


@dataclass
class Recorder:
    exchanges: list[Exchange] = field(default_factory=list)

    async def hook(self, response: httpx.Response) -> None:
        await response.aread()
        self.exchanges.append(Exchange(response.request, response))


def to_openapi(exchange: Exchange) -> tuple[MockRequest, MockResponse]:
    request, response = exchange.request, exchange.response
    url = request.url
    mock_request = MockRequest(
        host_url=f"{url.scheme}://{url.netloc.decode()}",
        method=request.method.lower(),
        path=url.path,
        args=list(url.params.multi_items()),  # type: ignore[arg-type]
        headers=dict(request.headers),
        data=request.content or None,
        content_type=request.headers.get("content-type", "application/json"),
    )
    mock_response = MockResponse(
        data=response.content,
        status_code=response.status_code,
        headers=dict(response.headers),
        content_type=response.headers.get("content-type", "application/json").split(";")[0],
    )
    return mock_request, mock_response


def validate_exchange(spec: OpenAPI, exchange: Exchange) -> None:
    """Raise unless the pair conforms; the only tolerated gaps are listed inline."""
    mock_request, mock_response = to_openapi(exchange)
    try:
        spec.validate_request(mock_request)
    except SecurityValidationError:
        # Deliberately unauthenticated requests: Authentik must answer 403 GenericError.
        assert exchange.response.status_code == 403, exchange.response.text
    try:
        spec.validate_response(mock_request, mock_response)
    except ResponseNotFound:
        # The schema documents no 404 for retrieve/update/delete, yet DRF answers 404 {"detail"}.
        assert exchange.response.status_code == 404, exchange.response.text
        assert isinstance(exchange.response.json()["detail"], str)


@dataclass
class AuthentikLab:
    url: str
    client: httpx.AsyncClient
    recorder: Recorder
    app: web.Application

    def anonymous(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url + "/api/v3", event_hooks={"response": [self.recorder.hook]}, **kwargs
        )


async def start_server(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


def tampered(exchange: Exchange, change: Callable[[dict[str, Any]], None]) -> Exchange:
    """A copy of ``exchange`` whose JSON response body was edited by ``change``."""
    body = exchange.response.json()
    change(body)
    response = httpx.Response(
        exchange.response.status_code,
        headers={"content-type": "application/json"},
        content=json.dumps(body).encode(),
        request=exchange.request,
    )
    return Exchange(exchange.request, response)
