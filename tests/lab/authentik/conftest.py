"""Fixtures: the Authentik stand-in on a real socket with a recording client; at teardown every recorded
request/response pair is validated against Authentik's OpenAPI schema."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from authentik_harness import TOKEN, AuthentikLab, Recorder, load_spec, start_server, validate_exchange
from openapi_core import OpenAPI
from openapi_core.exceptions import OpenAPIError

from tenantflow.lab.authentik.app import build_app
from tenantflow.lab.authentik.directory import DirectorySink


@pytest.fixture(scope="session")
def authentik_spec() -> OpenAPI:
    return load_spec()


@pytest.fixture
def directory_sink() -> DirectorySink | None:
    """Override in a test module to plug a sink (e.g. the real slapd tree)."""
    return None


@pytest.fixture
async def authentik(authentik_spec: OpenAPI, directory_sink: DirectorySink | None) -> AsyncIterator[AuthentikLab]:
    app = build_app(TOKEN, directory=directory_sink)
    runner, url = await start_server(app)
    recorder = Recorder()
    client = httpx.AsyncClient(
        base_url=url + "/api/v3",
        headers={"Authorization": f"Bearer {TOKEN}"},
        event_hooks={"response": [recorder.hook]},
    )
    try:
        yield AuthentikLab(url=url, client=client, recorder=recorder, app=app)
    finally:
        await client.aclose()
        await runner.cleanup()
    assert recorder.exchanges, "the test made no request"
    for exchange in recorder.exchanges:
        try:
            validate_exchange(authentik_spec, exchange)
        except OpenAPIError as exc:
            raise AssertionError(
                f"{exchange.request.method} {exchange.request.url} -> "
                f"{exchange.response.status_code}: {exc!r} {exc.__cause__!r}"
            ) from exc
