"""Liveness and readiness of the worker process, for Kubernetes probes and Compose health checks.

With ``TENANTFLOW_HEALTH_PORT`` set, the worker serves on that port:

* ``GET /livez``: 200 while the process serves requests and its Temporal worker has not died on its own (a fatal
  worker error, not a requested stop); 503 otherwise, so the orchestrator restarts the process.
* ``GET /readyz``: 200 once the Temporal worker runs (it has validated its namespace and polls its task queue)
  and Temporal's frontend answers its gRPC health check; 503 before that, once a stop was requested (draining)
  and while Temporal is unreachable. The body is one line saying why.

Both are plain text, unauthenticated and carry no secret: they expose only whether the worker is up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

from aiohttp import web
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.worker import Worker

TEMPORAL_CHECK_TIMEOUT = timedelta(seconds=3)


class HealthSettings(BaseSettings):
    """Where the probes are served; off when no port is set."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    port: int | None = Field(None, alias="TENANTFLOW_HEALTH_PORT", ge=1, le=65535)
    host: str = Field("0.0.0.0", alias="TENANTFLOW_HEALTH_HOST")


@dataclass(frozen=True)
class Probe:
    """The state the probes report on: the worker, its client and the stop the process was asked for."""

    client: Client
    worker: Worker
    stop: asyncio.Event

    def live(self) -> tuple[bool, str]:
        if self.worker.is_shutdown and not self.stop.is_set():
            return False, "the Temporal worker stopped on a fatal error"
        return True, "alive"

    async def ready(self) -> tuple[bool, str]:
        if self.stop.is_set():
            return False, "stopping: draining in-flight tasks"
        if not self.worker.is_running:
            return False, "the Temporal worker is not running"
        try:
            serving = await self.client.service_client.check_health(timeout=TEMPORAL_CHECK_TIMEOUT)
        except RPCError as exc:
            return False, f"Temporal unreachable: {exc.message}"
        if not serving:
            return False, "Temporal's frontend reports not serving"
        return True, f"polling task queue {self.worker.config()['task_queue']}"


def health_app(probe: Probe) -> web.Application:
    def answer(ok: bool, why: str) -> web.Response:
        return web.Response(status=200 if ok else 503, text=why + "\n")

    async def livez(_: web.Request) -> web.Response:
        return answer(*probe.live())

    async def readyz(_: web.Request) -> web.Response:
        return answer(*await probe.ready())

    app = web.Application()
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    return app


@asynccontextmanager
async def serve_health(settings: HealthSettings, probe: Probe) -> AsyncIterator[None]:
    """Serve ``/livez`` and ``/readyz`` for ``probe`` while the context is open (nothing when no port is set)."""
    if settings.port is None:
        yield
        return
    runner = web.AppRunner(health_app(probe))
    await runner.setup()
    await web.TCPSite(runner, settings.host, settings.port).start()
    try:
        yield
    finally:
        await runner.cleanup()
