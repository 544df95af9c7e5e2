"""One Prometheus ``/metrics`` endpoint for the worker: tenantflow's step metrics plus the Temporal SDK's.

The SDK exports its metrics on a private loopback port (its own Prometheus
exporter); ``/metrics`` on the public port serves ``prometheus_client``'s
registry followed by the SDK's exposition, so one scrape target has both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from tenantflow.worker.ports import free_port
from tenantflow.worker.temporal import core_logging


def sdk_runtime() -> tuple[Runtime, str]:
    """A Temporal runtime exporting SDK metrics on a private loopback port; returns it and its URL."""
    address = f"127.0.0.1:{free_port()}"
    runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=address), logging=core_logging()))
    return runtime, f"http://{address}/metrics"


def metrics_app(sdk_url: str | None) -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(REGISTRY)
        if sdk_url:
            async with httpx.AsyncClient(timeout=5) as http:
                body += (await http.get(sdk_url)).content
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


@asynccontextmanager
async def serve_metrics(port: int, sdk_url: str | None, host: str = "0.0.0.0") -> AsyncIterator[None]:
    runner = web.AppRunner(metrics_app(sdk_url))
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        yield
    finally:
        await runner.cleanup()
