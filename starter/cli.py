"""``tenantflow``: the operator's command line (typer + rich).

Exit codes scripts can rely on (``--output json`` on every command prints
machine-readable output on stdout; messages go to stderr):

* 0 success
* 1 unexpected error (Temporal or a service unreachable, a bug)
* 2 bad input: a contract or argument that cannot be used, or a preflight with errors (``plan``)
* 3 the run failed, was rejected or rolled back
* 4 refused: a run for the target is already active, a stale plan hash, a gate that is not open,
  a run that has not finished (``handover``)
* 5 no such run
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.models.enrollment import WorkerEnrollment
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import ENROLLMENT_GATES, RunAlreadyActive, TenantflowClient, onboarding_id
from tenantflow.starter.contracts import ContractError, load_enrollment, load_tenant
from tenantflow.starter.devserver import DevServer
from tenantflow.starter.extras import require_extra
from tenantflow.starter.render import (
    findings_table,
    plan_diff,
    print_plan,
    status_view,
    wait_with_progress,
    watch_status,
)
from tenantflow.workflows.search import STAGE

T = TypeVar("T")

EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3
EXIT_REFUSED = 4
EXIT_NOT_FOUND = 5



class Tenantflow(typer.Typer):
    """The CLI app; as a program it ends with ``os._exit`` once output is flushed.

    The Temporal client's native threads can crash interpreter finalization of a short-lived
    process (temporalio/sdk-python#300: "PyGILState_Release: thread state ... must be current");
    skipping finalization keeps exit codes reliable for scripts.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        code = 0
        try:
            super().__call__(*args, **kwargs)
        except SystemExit as exc:
            if exc.code is not None and not isinstance(exc.code, int):
                sys.stderr.write(f"{exc.code}\n")  # as the interpreter does for sys.exit("message")
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = EXIT_ERROR
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


app = Tenantflow(help="Durable, human-gated GPU-cluster runbooks on Temporal.", no_args_is_help=True)
console = Console()
errors = Console(stderr=True)

OutputOpt = Annotated[str, typer.Option("--output", "-o", help="text or json")]
KubeconfigOpt = Annotated[str | None, typer.Option(help="kubeconfig for targets the file leaves out")]
ApproverOpt = Annotated[str, typer.Option(help="who answers (recorded in the run)")]


class Refused(RuntimeError):
    """The request makes no sense in the run's current state (exit 4)."""


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning known failures into messages and exit codes."""
    try:
        return asyncio.run(coro)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (RunAlreadyActive, Refused) as exc:
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
        raise typer.Exit(EXIT_NOT_FOUND if exc.status == RPCStatusCode.NOT_FOUND else EXIT_ERROR) from None


def emit(data: Any, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        console.print(data)


@app.command()
def worker() -> None:
    """Run the worker (TEMPORAL_ADDRESS, TENANTFLOW_ENV_FILE, ... from the environment)."""
    from tenantflow.worker.run import main

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

    from tenantflow.worker.codec import EncryptionCodec, KeyRing, codec_app
    from tenantflow.worker.config import TemporalSettings

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
def plan(
    file: Path, kubeconfig: KubeconfigOpt = None, output: OutputOpt = "text",
) -> None:
    """Read-only preflight and plan of a tenant contract, without starting a run; exit 2 on preflight errors."""
    from tenantflow.starter.plan import preflight_and_plan, use_configured_services

    try:
        contract = load_tenant(file, kubeconfig)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    use_configured_services()
    report = preflight_and_plan(contract)
    if output == "json":
        emit(report.model_dump(mode="json") | {"plan_hash": report.plan.plan_hash if report.plan else None,
                                               "ok": not report.errors}, output)
    else:
        problems = [f for f in report.findings if not f.ok]
        if problems:
            console.print(findings_table(problems))
        if report.plan is not None:
            console.print(plan_diff(report.plan))
            console.print(f"\nNothing was written. Start the run with: tenantflow onboard {file}")
    if report.errors:
        errors.print(f"[red]preflight failed with {len(report.errors)} error(s); nothing was written[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)


async def show_plan(api: TenantflowClient, workflow_id: str, output: str) -> None:
    """Wait (with a spinner) for a freshly started run's plan and print it with the approve command."""
    with errors.status(f"waiting for the plan of {workflow_id} (preflight and plan run first)"):
        current = await api.wait_for_plan(workflow_id)
    if output == "json":
        emit(current.model_dump(mode="json"), output)
        return
    if current.plan is not None:
        print_plan(console, current.plan)
    console.print(status_view(workflow_id, current))


async def follow_start(api: TenantflowClient, handle: WorkflowHandle[Any, Any], wait: bool, output: str) -> None:
    """After a start: wait for the plan and show it, or say how to follow the run."""
    if wait:
        await show_plan(api, handle.id, output)
    elif output == "json":
        emit({"workflow_id": handle.id, "run_id": handle.result_run_id}, output)
    else:
        emit(f"started {handle.id}; follow it with: tenantflow status {handle.id} --watch", output)


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
        await follow_start(api, await api.start_onboarding(contract), wait, output)
    run(go())


@app.command()
def enroll(
    file: Path, kubeconfig: KubeconfigOpt = None,
    wait: Annotated[bool, typer.Option(help="wait for the bootstrap plan and print it")] = True,
    output: OutputOpt = "text",
) -> None:
    """Start enrolling a worker cluster into the Hub (greenfield or brownfield, as the file says)."""
    async def go() -> None:
        contract = load_enrollment(file, kubeconfig)
        api = await TenantflowClient.connect()
        await follow_start(api, await api.start_enrollment(contract), wait, output)
    run(go())


@app.command()
def decommission(
    namespace: str, worker_name: str,
    contract: Annotated[Path | None, typer.Option(
        help="the enrollment contract; default: the input of the latest enroll/NS/WORKER run")] = None,
    kubeconfig: KubeconfigOpt = None, output: OutputOpt = "text",
) -> None:
    """Decommission a worker: cordon, drain, remove from the Hub, then a gated `worker reset`."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        enrollment = (load_enrollment(contract, kubeconfig) if contract is not None
                      else await api.enrolled_contract(namespace, worker_name))
        if (enrollment.tenant_namespace, enrollment.worker_name) != (namespace, worker_name):
            raise ContractError(f"{contract}: names {enrollment.tenant_namespace}/{enrollment.worker_name}, "
                                f"not {namespace}/{worker_name}")
        await follow_start(api, await api.start_decommission(enrollment), False, output)
    run(go())


@app.command()
def status(
    workflow_id: str, output: OutputOpt = "text",
    watch: Annotated[bool, typer.Option("--watch", "-w", help="refresh until the run ends")] = False,
) -> None:
    """Show a run: stage, steps with durations, the gate it waits on and how to answer it."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        if watch and output != "json":
            await watch_status(console, api, workflow_id)
            return
        current = await api.status(workflow_id)
        emit(current.model_dump(mode="json"), output) if output == "json" else console.print(
            status_view(workflow_id, current))
        while watch and await api.running(workflow_id):
            await asyncio.sleep(1)
            latest = await api.status(workflow_id)
            if latest != current:
                current = latest
                sys.stdout.write(current.model_dump_json() + "\n")
                sys.stdout.flush()
    run(go())


def stage_of(attributes: TypedSearchAttributes) -> str:
    return attributes.get(STAGE) or ""


def answered(workflow_id: str, answer: str, output: str) -> None:
    emit({"workflow_id": workflow_id, "answer": answer} if output == "json" else answer, output)


@app.command()
def approve(
    workflow_id: str,
    plan_hash: Annotated[str, typer.Option("--plan-hash", help="the hash `status` shows")],
    approver: ApproverOpt = "operator", comment: str = "", output: OutputOpt = "text",
) -> None:
    """Approve a published plan (onboarding, enrollment or reset) by its exact hash."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        answered(workflow_id, await api.approve(workflow_id, plan_hash, approver, comment), output)
    run(go())


@app.command()
def reject(workflow_id: str, reason: Annotated[str, typer.Option()], approver: ApproverOpt = "operator",
           output: OutputOpt = "text") -> None:
    """Reject a published onboarding plan: the run ends and nothing is written."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        answered(workflow_id, await api.reject(workflow_id, reason, approver), output)
    run(go())


def gate_command(gate: str, help_text: str) -> None:
    """Register ``tenantflow <gate-with-dashes> ID``: answer one of the enrollment's yes/no gates."""
    def answer(workflow_id: str, approver: ApproverOpt = "operator", comment: str = "",
               output: OutputOpt = "text") -> None:
        async def go() -> None:
            api = await TenantflowClient.connect()
            answered(workflow_id, await api.answer_gate(workflow_id, gate, approver, comment), output)
        run(go())

    answer.__doc__ = help_text
    app.command(gate.replace("_", "-"))(answer)


GATE_HELP = {
    "submissions_paused": "Confirm every Hub submission path of the organization is paused (brownfield).",
    "approve_adoption": "Approve adopting the preset objects whose diff is empty (brownfield).",
    "uncordon": "Recorded work is verified: enable Hub dispatch to the worker.",
    "resume_submissions": "The canary passed: resume the organization's submission paths.",
}
for _gate in ENROLLMENT_GATES:
    gate_command(_gate, GATE_HELP[_gate])
gate_command("confirm_purge", "Confirm that offboarding deletes the tenant's Weka data (purge_data runs).")


@app.command()
def offboard(
    slug: str,
    contract: Annotated[Path | None, typer.Option(
        help="the tenant contract; default: the input of the latest tenant/SLUG onboarding run")] = None,
    purge_data: Annotated[bool, typer.Option(help="also delete the Weka org, filesystems and quotas "
                                                  "(asks for confirm-purge)")] = False,
    kubeconfig: KubeconfigOpt = None, output: OutputOpt = "text",
) -> None:
    """Offboard a tenant: a gated teardown in rollback order; data is kept unless --purge-data."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        tenant = load_tenant(contract, kubeconfig) if contract is not None else await api.onboarded_contract(slug)
        if tenant.slug != slug:
            raise ContractError(f"{contract}: is the contract of {tenant.slug}, not {slug}")
        await follow_start(api, await api.start_offboarding(tenant, purge_data), False, output)
    run(go())


@app.command()
def cancel(workflow_id: str, output: OutputOpt = "text") -> None:
    """Cancel a run; what it applied is rolled back."""
    async def go() -> None:
        api = await TenantflowClient.connect()
        await api.cancel(workflow_id)
        answered(workflow_id, f"cancel requested for {workflow_id}", output)
    run(go())


def total_steps(workflow_type: str) -> int | None:
    """How many steps a successful run executes, for the progress bar (known for onboarding only)."""
    if workflow_type != "TenantOnboarding":
        return None
    from tenantflow.workflows.onboarding import APPLY_STEPS, PLAN_LAYERS, PREFLIGHT_LAYERS, SMOKE_STEPS

    return len(PREFLIGHT_LAYERS) + len(PLAN_LAYERS) + len(APPLY_STEPS) + len(SMOKE_STEPS) + 2


def print_outcome(outcome: Any, output: str) -> None:
    if output == "json":
        emit(outcome.model_dump(mode="json"), output)
    elif getattr(outcome, "handover", None) is not None:
        console.print(outcome.handover.markdown, markup=False, highlight=False)
    else:
        console.print(f"{outcome.status}: {getattr(outcome, 'message', '')}")
    if outcome.status != "completed":
        raise typer.Exit(EXIT_RUN_FAILED)


@app.command()
def result(workflow_id: str, output: OutputOpt = "text") -> None:
    """Wait for a run's result (progress bar on stderr); prints the handover sheet of an onboarding."""
    async def go() -> Any:
        api = await TenantflowClient.connect()
        described = await api.handle(workflow_id).describe()
        if output == "json" or not errors.is_terminal:
            return await api.result(workflow_id)
        return await wait_with_progress(errors, api, workflow_id, total_steps(described.workflow_type))
    print_outcome(run(go()), output)


@app.command()
def handover(slug: str, output: OutputOpt = "text") -> None:
    """Print the handover sheet of a finished onboarding (exit 4 while it still runs)."""
    async def go() -> Any:
        api = await TenantflowClient.connect()
        workflow_id = onboarding_id(slug)
        if await api.running(workflow_id):
            current = await api.status(workflow_id)
            raise Refused(f"{workflow_id} has not finished (stage {current.stage}); "
                          f"see `tenantflow status {workflow_id} --watch`")
        return await api.result(workflow_id)
    print_outcome(run(go()), output)


@app.command("list")
def list_runs(
    tenant: Annotated[str | None, typer.Option(help="tenant slug")] = None,
    worker_cluster: Annotated[str | None, typer.Option("--worker", help="worker cluster name")] = None,
    stage: Annotated[str | None, typer.Option(help="stage, e.g. gate:approve_plan")] = None,
    running: Annotated[bool, typer.Option(help="only runs still in progress")] = False,
    limit: int = 100, output: OutputOpt = "text",
) -> None:
    """List runs, filtered by tenant, worker cluster or stage through search attributes."""
    clauses = [f"TenantSlug = '{tenant}'" if tenant else "",
               f"WorkerCluster = '{worker_cluster}'" if worker_cluster else "",
               f"Stage = '{stage}'" if stage else "", "ExecutionStatus = 'Running'" if running else ""]
    query = " AND ".join(c for c in clauses if c)

    async def go() -> None:
        api = await TenantflowClient.connect()
        rows = [{"id": r.id, "type": r.workflow_type, "status": r.status.name if r.status else "",
                 "stage": stage_of(r.typed_search_attributes), "started": str(r.start_time),
                 "closed": str(r.close_time or "")} for r in await api.list_runs(query, limit)]
        if output == "json":
            emit(rows, output)
            return
        table = Table(title=f"runs{' where ' + query if query else ''}")
        for column in ("id", "type", "status", "stage", "started"):
            table.add_column(column)
        for row in rows:
            table.add_row(*(row[c] for c in ("id", "type", "status", "stage", "started")))
        console.print(table)
    run(go())


@app.command("serve-api")
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


@app.command()
def bench(
    tenants: Annotated[int, typer.Option(help="concurrent onboardings for figure (b)")] = 100,
    gate_runs: Annotated[int, typer.Option(help="onboardings on an idle worker for figure (e)")] = 5,
    latency_ms: Annotated[float | None, typer.Option(
        help="one latency for every simulated activity (default: the latencies measured against the lab)")] = None,
    max_activities: Annotated[int | None, typer.Option(
        help="activity slots of the bench worker (default: one per concurrent onboarding, at least 32)")] = None,
    lab_dir: Annotated[Path | None, typer.Option(
        help="a running lab (`tenantflow lab up`): (a), (c) and (d) then use the real activities against it")] = None,
    tax_pairs: Annotated[int, typer.Option(
        help="with --lab-dir: onboardings through Temporal and direct for (c), in A-B-B-A order")] = 2,
    log_dir: Annotated[Path | None, typer.Option(help="where the bench workers write their logs")] = None,
    kubeconfig: KubeconfigOpt = None, output: OutputOpt = "text",
) -> None:
    """Print the five benchmark figures of issue 7 (see bench/figures.py); needs a Temporal server (TEMPORAL_ADDRESS).

    Exit code 3 when an onboarding failed or the lab could not be cleaned up.
    """
    require_extra("lab", "tenantflow bench")
    from tenantflow.bench.figures import bench as measure
    from tenantflow.bench.report import report_rows, summary
    from tenantflow.lab.endpoints import LabEndpoints
    from tenantflow.worker.config import TemporalSettings
    from tenantflow.worker.temporal import connect

    example = Path(__file__).resolve().parents[1] / "examples" / "tenant-foo.yaml"
    lab = LabEndpoints.load(lab_dir) if lab_dir else None
    template = load_tenant(example, kubeconfig or (str(lab.kubeconfig) if lab else "/nonexistent/kubeconfig"))

    async def go() -> Any:
        client = await connect(TemporalSettings())
        with errors.status(f"benchmarking: {'lab runs, then ' if lab else ''}{tenants} concurrent onboardings"):
            return await measure(client, template, tenants, gate_runs,
                                 latency_ms / 1000 if latency_ms is not None else None, max_activities, lab, tax_pairs,
                                 log_dir)

    figures = run(go())
    facts = summary(figures)
    if output == "json":
        emit(facts, output)
    else:
        table = Table(title="tenantflow bench")
        for column in ("figure", "value", "target"):
            table.add_column(column)
        for row in report_rows(figures):
            table.add_row(*row)
        console.print(table)
    if not facts["ok"]:
        raise typer.Exit(EXIT_RUN_FAILED)


@app.command()
def demo(state_dir: Annotated[Path, typer.Option(help="state of the lab and Temporal")] = Path(".state")) -> None:
    """The main job: lab and Temporal up, onboard examples/tenant-foo.yaml, print the handover sheet."""
    require_extra("lab", "tenantflow demo")
    from tenantflow.starter.demo import demo as run_demo

    outcome = run(run_demo(state_dir.resolve(), console))
    if outcome.status != "completed":
        raise typer.Exit(EXIT_RUN_FAILED)


lab_app = typer.Typer(help="The lab: local stand-ins for every system the workflows drive.")
app.add_typer(lab_app, name="lab")
StateDirOpt = Annotated[Path, typer.Option(help="where the lab keeps its state, logs and pids")]


@lab_app.callback()
def lab_needs_its_extra() -> None:
    require_extra("lab", "tenantflow lab")


@lab_app.command("up")
def lab_up(state_dir: StateDirOpt = Path(".state/lab"), output: OutputOpt = "text") -> None:
    """Start every stand-in on loopback; writes DIR/kubeconfig and DIR/lab.env."""
    from tenantflow.lab.supervisor import up

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
    from tenantflow.lab.supervisor import down

    stopped = down(state_dir)
    console.print(f"stopped {len(stopped)} process(es): {', '.join(stopped) or 'none'}")
