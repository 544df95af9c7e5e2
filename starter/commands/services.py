"""Commands that run a process until stopped: the worker, the Temporal dev server, the codec server, the HTTP
API, and the demo."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Annotated

import typer

from tenantflow.models.status import RunOutcome
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import DevServer, PortTaken
from tenantflow.starter.extras import require_extra
from tenantflow.starter.output import EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_RUN_FAILED, console, errors, run
from tenantflow.worker.tokens import TokenFile, TokenFileError


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
    try:
        pid = server.start(headless=headless)
    except PortTaken as exc:
        errors.print(
            f"[red]{exc}: start the dev server on another one ({exc.option} PORT), or stop the other server "
            f"listening on {exc.port}[/red]",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_REFUSED) from None
    ui = "" if headless else f", UI http://127.0.0.1:{ui_port}"
    console.print(f"Temporal dev server pid {pid} on {server.address}{ui}; log {server.log_file}")


TlsCertOpt = Annotated[Path | None, typer.Option(help="serve HTTPS with this PEM certificate (chain)")]
TlsKeyOpt = Annotated[Path | None, typer.Option(help="the certificate's PEM private key")]


def tls_context(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """A server TLS context from ``--tls-cert``/``--tls-key`` (both or neither), or None for plain HTTP."""
    if (cert is None) != (key is None):
        errors.print("[red]--tls-cert and --tls-key go together[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)
    if cert is None or key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def load_tokens() -> TokenFile:
    """The per-user token file (``TENANTFLOW_API_TOKENS_FILE``), or exit naming the fix."""
    from tenantflow.starter.http_api import api_tokens

    try:
        return api_tokens()
    except TokenFileError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None


def token(
    user: str,
    role: Annotated[
        list[str],
        typer.Option(
            help="ROLE:PATTERN, repeatable: viewer, requester, approver or admin over the tenants (and worker "
            "clusters, as workerclusters/NS/WORKER) the fnmatch pattern matches, e.g. requester:tenant-a*"
        ),
    ],
) -> None:
    """Make a bearer token for USER with its roles: prints the token once, and the line to append to
    TENANTFLOW_API_TOKENS_FILE."""
    from tenantflow.worker.tokens import new_token

    try:
        secret, line = new_token(user, role)
    except TokenFileError as exc:
        errors.print(f"[red]{exc}[/red]", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    console.print(f"token for {user} (shown once): {secret}")
    console.print(f"append to the token file: {line}", soft_wrap=True)


def codec_server(
    port: int = 8081,
    host: str = "127.0.0.1",
    cors_origin: Annotated[list[str] | None, typer.Option(help="the Temporal UI origin(s) allowed to call")] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """Serve the payload codec (/encode, /decode) for the Temporal UI (--ui-codec-endpoint http://HOST:PORT) to
    callers with a token of TENANTFLOW_API_TOKENS_FILE."""
    from aiohttp import web

    from tenantflow.worker.codec import EncryptionCodec, KeyRing
    from tenantflow.worker.codec_server import codec_app
    from tenantflow.worker.config import TemporalSettings

    settings = TemporalSettings()
    ring = KeyRing.from_env(settings.codec_key_file)
    if ring is None:
        errors.print("[red]no codec keys: set TENANTFLOW_CODEC_KEY_FILE or TENANTFLOW_CODEC_KEYS[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)
    tokens, tls = load_tokens(), tls_context(tls_cert, tls_key)
    origins = cors_origin or ["http://localhost:8233", "http://127.0.0.1:8233"]
    scheme = "https" if tls else "http"
    console.print(f"codec server on {scheme}://{host}:{port} (key {ring.current[0]}; CORS {', '.join(origins)})")
    codec = EncryptionCodec(ring, settings.codec_allow_plaintext)
    web.run_app(codec_app(codec, origins, tokens), host=host, port=port, print=None, ssl_context=tls)


def serve_api(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8088,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """Serve the HTTP API (every route in GET /openapi.json: start runs, follow them, answer their gates) to callers
    with a per-user token of TENANTFLOW_API_TOKENS_FILE; the token's user is recorded as the approver."""
    from aiohttp import web

    from tenantflow.starter.http_api import make_api_app

    tokens, tls = load_tokens(), tls_context(tls_cert, tls_key)

    async def app_factory() -> web.Application:
        return make_api_app(await TenantflowClient.connect(), tokens)

    web.run_app(app_factory(), host=host, port=port, ssl_context=tls)


def demo(state_dir: Annotated[Path, typer.Option(help="state of the lab and Temporal")] = Path(".state")) -> None:
    """The main job: lab and Temporal up, onboard examples/tenant-foo.yaml, print the handover sheet."""
    require_extra("lab", "tenantflow demo")
    from tenantflow.starter.demo import demo as run_demo

    outcome = run(run_demo(state_dir.resolve(), console))
    if outcome.status != RunOutcome.completed:
        raise typer.Exit(EXIT_RUN_FAILED)
