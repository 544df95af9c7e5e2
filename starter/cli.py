"""``tenantflow``: the operator's command line (typer + rich).

Exit codes scripts can rely on: 0 success, 1 unexpected error, 2 bad input
(contract or arguments), 3 the run failed or was rejected, 4 refused (a run is
already active, a stale plan hash, a gate that is not open).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from models.enrollment import WorkerEnrollment
from models.onboarding import OnboardingInput, OnboardingResult
from models.tenant import TenantContract
from starter.client import RunAlreadyActive, TenantflowClient
from starter.contracts import ContractError, load_enrollment, load_tenant
from starter.devserver import DevServer
from starter.render import print_plan, status_view

T = TypeVar("T")

EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3
EXIT_REFUSED = 4

app = typer.Typer(help="Durable, human-gated GPU-cluster runbooks on Temporal.", no_args_is_help=True)
console = Console()
errors = Console(stderr=True)

OutputOpt = Annotated[str, typer.Option("--output", "-o", help="text or json")]
KubeconfigOpt = Annotated[str | None, typer.Option(help="kubeconfig for targets the file leaves out")]


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning known failures into messages and exit codes."""
    try:
        return asyncio.run(coro)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except RunAlreadyActive as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_REFUSED) from None
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        errors.print(f"[red]refused: {getattr(cause, 'message', None) or cause or exc}[/red]")
        raise typer.Exit(EXIT_REFUSED) from None
    except WorkflowFailureError as exc:
        cause = exc.cause
        errors.print(f"[red]run failed: {getattr(cause, 'message', None) or cause}[/red]")
        raise typer.Exit(EXIT_RUN_FAILED) from None
    except RPCError as exc:
        errors.print(f"[red]temporal: {exc.message}[/red]")
        raise typer.Exit(1) from None


def emit(data: Any, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        console.print(data)


@app.command()
def worker() -> None:
    """Run the worker (TEMPORAL_ADDRESS, TENANTFLOW_ENV_FILE, ... from the environment)."""
    from worker.run import main

    main()


@app.command("dev-server")
def dev_server(
    state_dir: Annotated[Path, typer.Option(help="where the SQLite file, pid and log live")] = Path(".state"),
    port: int = 7233, ui_port: int = 8233, headless: bool = False,
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


@app.command("codec-server")
def codec_server(
    port: int = 8081, host: str = "127.0.0.1",
    cors_origin: Annotated[list[str] | None, typer.Option(help="the Temporal UI origin(s) allowed to call")] = None,
) -> None:
    """Serve the payload codec (/encode, /decode) for the Temporal UI (--ui-codec-endpoint http://HOST:PORT)."""
    from aiohttp import web

    from worker.codec import EncryptionCodec, KeyRing, codec_app
    from worker.config import TemporalSettings

    ring = KeyRing.from_env(TemporalSettings().codec_key_file)
    if ring is None:
        errors.print("[red]no codec keys: set TENANTFLOW_CODEC_KEY_FILE or TENANTFLOW_CODEC_KEYS[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)
    origins = cors_origin or ["http://localhost:8233", "http://127.0.0.1:8233"]
    console.print(f"codec server on http://{host}:{port} (key {ring.current[0]}; CORS {', '.join(origins)})")
    web.run_app(codec_app(EncryptionCodec(ring), origins), host=host, port=port, print=None)

@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="write one <Name>.schema.json per model here")] = None,
) -> None:
    """Print the JSON Schema of every workflow input, for services in other languages."""
    schemas = {model.__name__: model.model_json_schema()
               for model in (TenantContract, WorkerEnrollment, OnboardingInput)}
    if out is None:
        sys.stdout.write(json.dumps(schemas, indent=2) + "\n")
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, body in schemas.items():
        (out / f"{name}.schema.json").write_text(json.dumps(body, indent=2) + "\n")
    console.print(f"wrote {len(schemas)} schemas to {out}")


@app.command()
def validate(
    file: Path,
    kind: Annotated[str, typer.Option(help="tenant or worker")] = "tenant",
    kubeconfig: KubeconfigOpt = None,
) -> None:
    """Check a contract file without touching anything; exit 2 with every problem listed."""
    try:
        model = load_tenant(file, kubeconfig) if kind == "tenant" else load_enrollment(file, kubeconfig)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    console.print(f"[green]{file}: valid {type(model).__name__}[/green]")


@app.command()
def onboard(
    file: Path, kubeconfig: KubeconfigOpt = None,
    wait: Annotated[bool, typer.Option(help="wait for the plan and print it")] = True,
    output: OutputOpt = "text",
) -> None:
    """Start onboarding a tenant; prints the plan and how to approve it."""
    async def go() -> None:
        contract = load_tenant(file, kubeconfig)
        api = await TenantflowClient.connect()
        handle = await api.start_onboarding(contract)
        if not wait:
            emit({"workflow_id": handle.id, "run_id": handle.result_run_id}, output)
            return
        status = await api.wait_for_plan(handle.id)
        if output == "json":
            emit(status.model_dump(mode="json"), output)
            return
        if status.plan is not None:
            print_plan(console, status.plan)
        console.print(status_view(handle.id, status))
    run(go())


@app.command()
def status(workflow_id: str, output: OutputOpt = "text") -> None:
    """Show a run: stage, steps with durations, the gate it waits on and how to answer it."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        current = await api.status(workflow_id)
        if output == "json":
            emit(current.model_dump(mode="json"), output)
        else:
            console.print(status_view(workflow_id, current))
    run(go())


@app.command()
def approve(
    workflow_id: str,
    plan_hash: Annotated[str, typer.Option("--plan-hash", help="the hash `status` shows")],
    approver: str = "operator", comment: str = "",
) -> None:
    """Approve a published plan by its exact hash."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        console.print(await api.approve(workflow_id, plan_hash, approver, comment))
    run(go())


@app.command()
def reject(workflow_id: str, reason: Annotated[str, typer.Option()], approver: str = "operator") -> None:
    """Reject a published plan: the run ends and nothing is written."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        console.print(await api.reject(workflow_id, reason, approver))
    run(go())


@app.command()
def cancel(workflow_id: str) -> None:
    """Cancel a run; what it applied is rolled back."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        await api.cancel(workflow_id)
        console.print(f"cancel requested for {workflow_id}")
    run(go())


@app.command()
def result(workflow_id: str, output: OutputOpt = "text") -> None:
    """Wait for a run's result; prints the handover sheet of an onboarding."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        outcome: OnboardingResult = await api.result(workflow_id)
        if output == "json":
            emit(outcome.model_dump(mode="json"), output)
        elif outcome.handover is not None:
            console.print(outcome.handover.markdown, markup=False, highlight=False)
        else:
            console.print(f"{outcome.status}: {outcome.message}")
        if outcome.status != "completed":
            raise typer.Exit(EXIT_RUN_FAILED)
    run(go())


@app.command("list")
def list_runs(
    tenant: str | None = None, stage: str | None = None, output: OutputOpt = "text",
) -> None:
    """List runs, filtered by tenant or stage through search attributes."""
    clauses = [f"TenantSlug = '{tenant}'" if tenant else "", f"Stage = '{stage}'" if stage else ""]
    query = " AND ".join(c for c in clauses if c)

    async def go() -> None:
        api = await TenantflowClient.connect()
        rows = [{"id": r.id, "type": r.workflow_type, "status": r.status.name if r.status else "",
                 "started": str(r.start_time)} for r in await api.list_runs(query)]
        emit(rows, output)
    run(go())


@app.command()
def demo(state_dir: Annotated[Path, typer.Option(help="state of the lab and Temporal")] = Path(".state")) -> None:
    """The main job: lab and Temporal up, onboard examples/tenant-foo.yaml, print the handover sheet."""
    from starter.demo import demo as run_demo

    outcome = run(run_demo(state_dir.resolve(), console))
    if outcome.status != "completed":
        raise typer.Exit(EXIT_RUN_FAILED)


lab_app = typer.Typer(help="The lab: local stand-ins for every system the workflows drive.")
app.add_typer(lab_app, name="lab")
StateDirOpt = Annotated[Path, typer.Option(help="where the lab keeps its state, logs and pids")]


@lab_app.command("up")
def lab_up(state_dir: StateDirOpt = Path(".state/lab"), output: OutputOpt = "text") -> None:
    """Start every stand-in on loopback; writes DIR/kubeconfig and DIR/lab.env."""
    from lab.supervisor import up

    endpoints = up(state_dir)
    if output == "json":
        emit(endpoints.model_dump(mode="json", exclude={"authentik_token", "weka_password", "ldap_bind_password"}),
             output)
        return
    console.print(f"lab up in {endpoints.state_dir}")
    console.print(f"  kubeconfig: {endpoints.kubeconfig} (contexts {', '.join(endpoints.kube_urls)})")
    console.print(f"  authentik:  {endpoints.authentik_url}\n  weka:       {endpoints.weka_url}")
    console.print(f"  ldap:       {endpoints.ldap_url}\n  slurm:      SLURM_CONF={endpoints.slurm_conf}")
    console.print(f"  env:        {endpoints.state_dir / 'lab.env'}")


@lab_app.command("down")
def lab_down(state_dir: StateDirOpt = Path(".state/lab")) -> None:
    """Stop every lab process recorded in DIR."""
    from lab.supervisor import down

    stopped = down(state_dir)
    console.print(f"stopped {len(stopped)} process(es): {', '.join(stopped) or 'none'}")
