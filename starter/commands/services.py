"""Commands that run a process until stopped: the worker, the Temporal dev server, the codec server, the HTTP
API, and the demo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import DevServer
from tenantflow.starter.extras import require_extra
from tenantflow.starter.output import EXIT_BAD_INPUT, EXIT_RUN_FAILED, console, errors, run


def worker() -> None:
    """Run the worker (TEMPORAL_ADDRESS, TENANTFLOW_ENV_FILE, ... from the environment)."""
    from tenantflow.worker.run import main

    main()


def dev_server(
    state_dir: Annotated[Path, typer.Option(help="where the SQLite file, pid and log live")] = Path(".state"),
    port: int = 7233,
    ui_port: int = 8233,
    headless: bool = False,
    stop: Annotated[bool, typer.Option(help="stop the server started from this state dir")] = False,
) -> None:
    """Start (or --stop) the embedded Temporal dev server with tenantflow's search attributes."""
    server = DevServer(state_dir=state_dir.resolve(), port=port, ui_port=ui_port)
    if stop:
        console.print("stopped" if server.stop() else "not running")
        return
    pid = server.start(headless=headless)
    ui = "" if headless else f", UI http://127.0.0.1:{ui_port}"
    console.print(f"Temporal dev server pid {pid} on {server.address}{ui}; log {server.log_file}")


def codec_server(
    port: int = 8081,
    host: str = "127.0.0.1",
    cors_origin: Annotated[list[str] | None, typer.Option(help="the Temporal UI origin(s) allowed to call")] = None,
) -> None:
    """Serve the payload codec (/encode, /decode) for the Temporal UI (--ui-codec-endpoint http://HOST:PORT)."""
    from aiohttp import web

    from tenantflow.worker.codec import EncryptionCodec, KeyRing, codec_app
    from tenantflow.worker.config import TemporalSettings

    ring = KeyRing.from_env(TemporalSettings().codec_key_file)
    if ring is None:
        errors.print("[red]no codec keys: set TENANTFLOW_CODEC_KEY_FILE or TENANTFLOW_CODEC_KEYS[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)
    origins = cors_origin or ["http://localhost:8233", "http://127.0.0.1:8233"]
    console.print(f"codec server on http://{host}:{port} (key {ring.current[0]}; CORS {', '.join(origins)})")
    web.run_app(codec_app(EncryptionCodec(ring), origins), host=host, port=port, print=None)


def serve_api(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8088,
) -> None:
    """Serve the HTTP API (POST /runs/onboarding, GET /runs/ID, POST /runs/ID/gates/GATE) with a bearer token."""
    from aiohttp import web

    from tenantflow.starter.http_api import api_token, make_api_app

    try:
        token = api_token()
    except ValueError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None

    async def app_factory() -> web.Application:
        return make_api_app(await TenantflowClient.connect(), token)

    web.run_app(app_factory(), host=host, port=port)


def demo(state_dir: Annotated[Path, typer.Option(help="state of the lab and Temporal")] = Path(".state")) -> None:
    """The main job: lab and Temporal up, onboard examples/tenant-foo.yaml, print the handover sheet."""
    require_extra("lab", "tenantflow demo")
    from tenantflow.starter.demo import demo as run_demo

    outcome = run(run_demo(state_dir.resolve(), console))
    if outcome.status != "completed":
        raise typer.Exit(EXIT_RUN_FAILED)
