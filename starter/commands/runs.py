"""Commands on a run of any type: follow it, cancel it, wait for its result, list runs (its gates are answered by
:mod:`starter.commands.gates`)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import TypedSearchAttributes

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.status import RunStatus
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.failures import explain
from tenantflow.starter.output import (
    EXIT_BAD_INPUT,
    EXIT_REFUSED,
    OutputOpt,
    Refused,
    RunFailed,
    answered,
    console,
    emit,
    errors,
    print_outcome,
    run,
)
from tenantflow.starter.render import print_plan, status_view, wait_with_progress, watch_status
from tenantflow.workflows.search import STAGE
from tenantflow.workflows.smoke_gate import SMOKE_FAILED

C = TypeVar("C", TenantContract, WorkerEnrollment)


async def show_plan(api: TenantflowClient, workflow_id: str, output: str, wide: bool = False) -> None:
    """Wait (with a spinner) for a freshly started run's plan and print it with the approve command."""
    with errors.status(f"waiting for the plan of {workflow_id} (preflight and plan run first)"):
        current = await api.wait_for_plan(workflow_id)
    if output == "json":
        emit(current.model_dump(mode="json"), output)
        return
    if current.plan is not None:
        print_plan(console, current.plan, wide)
    console.print(status_view(workflow_id, current))


async def follow_start(
    api: TenantflowClient, handle: WorkflowHandle[Any, Any], wait: bool, output: str, wide: bool = False
) -> None:
    """After a start: wait for the plan and show it, or say how to follow the run."""
    if wait:
        await show_plan(api, handle.id, output, wide)
    elif output == "json":
        emit({"workflow_id": handle.id, "run_id": handle.result_run_id}, output)
    else:
        emit(f"started {handle.id}; follow it with: tenantflow status {handle.id} --watch", output)


async def start_from_file(
    file: Path,
    load: Callable[[Path], C],
    start: Callable[[TenantflowClient, C], Awaitable[WorkflowHandle[Any, Any]]],
    wait: bool,
    output: str,
    wide: bool,
) -> None:
    """Start a run (an onboarding, an enrollment) of the contract in ``file`` and follow it (:func:`follow_start`)."""
    contract = load(file)
    api = await TenantflowClient.connect()
    await follow_start(api, await start(api, contract), wait, output, wide)


async def start_teardown(
    given: Path | None,
    load: Callable[[Path], C],
    recorded: Callable[[TenantflowClient], Awaitable[C]],
    target_of: Callable[[C], str],
    target: str,
    start: Callable[[TenantflowClient, C], Awaitable[WorkflowHandle[Any, Any]]],
    output: str,
) -> None:
    """Start tearing ``target`` down (an offboarding, a decommission) from the contract file ``given``, else from the
    contract ``recorded`` (the target's record, else its latest run); a file of another target is refused."""
    api = await TenantflowClient.connect()
    contract = load(given) if given is not None else await recorded(api)
    if target_of(contract) != target:
        raise ContractError(f"{given}: is the contract of {target_of(contract)}, not {target}")
    await follow_start(api, await start(api, contract), False, output)


GATE_WAIT_S = 300.0
"""How long ``status --plan-hash`` and a gate command's ``--wait`` wait for the gate to open."""


async def wait_for_gate(
    api: TenantflowClient, workflow_id: str, gate: str, timeout_s: float = GATE_WAIT_S
) -> RunStatus:
    """The status of ``workflow_id`` once it waits at ``gate`` (while it plans, applies or tears down, no gate is
    open); refused when it waits at another gate, has ended, or opens none in ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        current = await api.status(workflow_id)
        open_gates = [g.name for g in current.gates]
        if gate in open_gates:
            return current
        if open_gates:
            raise Refused(f"{workflow_id} waits at {', '.join(open_gates)}, not at {gate} (stage {current.stage})")
        if not await api.running(workflow_id):
            raise Refused(f"{workflow_id} has ended (stage {current.stage}) without waiting at {gate}")
        if loop.time() > deadline:
            raise Refused(f"{workflow_id} did not wait at {gate} within {timeout_s:.0f}s (stage {current.stage})")
        await asyncio.sleep(0.5)


def status(
    workflow_id: str,
    output: OutputOpt = "text",
    watch: Annotated[bool, typer.Option("--watch", "-w", help="refresh until the run ends")] = False,
    plan_hash: Annotated[
        bool,
        typer.Option(
            "--plan-hash",
            help="print only the hash of the plan the open approve_plan gate waits for (waiting for the gate to "
            "open), for `approve --plan-hash`; exit 4 if the run waits at another gate or has ended",
        ),
    ] = False,
) -> None:
    """Show a run: stage, steps with durations, the gate it waits on and how to answer it."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        if plan_hash:
            waiting_at = await wait_for_gate(api, workflow_id, "approve_plan")
            sys.stdout.write(f"{waiting_at.plan_hash}\n")
            return
        if watch and output != "json":
            await watch_status(console, api, workflow_id)
            return
        current = await api.status(workflow_id)
        emit(current.model_dump(mode="json"), output) if output == "json" else console.print(
            status_view(workflow_id, current)
        )
        while watch and await api.running(workflow_id):
            await asyncio.sleep(1)
            latest = await api.status(workflow_id)
            if latest != current:
                current = latest
                sys.stdout.write(current.model_dump_json() + "\n")
                sys.stdout.flush()

    run(go())


def cancel(
    workflow_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="cancel without asking")] = False,
    output: OutputOpt = "text",
) -> None:
    """Cancel a run; what it applied is rolled back. Asks first (on stdin) unless --yes."""

    async def stage() -> str:
        api = await TenantflowClient.connect()
        current = (await api.status(workflow_id)).stage
        if not await api.running(workflow_id):
            raise Refused(f"{workflow_id} has already ended (stage {current}): there is nothing to cancel")
        return current

    async def go() -> None:
        api = await TenantflowClient.connect()
        await api.cancel(workflow_id)
        answered(workflow_id, f"cancel requested for {workflow_id}", output)

    if not yes:
        question = f"{workflow_id} is at stage {run(stage())}: cancel it and roll back what it applied?"
        try:
            confirmed = typer.confirm(question, err=True)
        except typer.Abort:
            confirmed = False
        if not confirmed:
            errors.print(f"not cancelled: {workflow_id} goes on (--yes cancels without asking)", highlight=False)
            raise typer.Exit(EXIT_BAD_INPUT)
    run(go())


def total_steps(workflow_type: str) -> int | None:
    """How many steps a successful run executes, for the progress bar (known for onboarding only)."""
    if workflow_type != "TenantOnboarding":
        return None
    from tenantflow.models.runbook import APPLY, PLAN, PREFLIGHT, SMOKE

    return len(PREFLIGHT) + len(PLAN) + len(APPLY) + len(SMOKE) + 2


STOPPED_AT: dict[str, tuple[str, ...]] = {"TenantOnboarding": (SMOKE_FAILED,)}
"""The gates at which a run of each type waits for the operator to fix something: ``result`` stops waiting there."""


def result(workflow_id: str, output: OutputOpt = "text") -> None:
    """Wait for a run's result (progress bar on stderr); prints the handover sheet of an onboarding. An onboarding
    that waits at smoke_failed is shown (the gate, its findings with their fixes) with exit 4: it ends only once
    the gate is answered."""

    async def go() -> Any:
        api = await TenantflowClient.connect()
        described = await api.handle(workflow_id).describe()
        running = described.status == WorkflowExecutionStatus.RUNNING
        stops = STOPPED_AT.get(described.workflow_type, ()) if running else ()  # an ended run needs no worker
        try:
            if output == "json" or not errors.is_terminal:
                return await api.result_unless_waiting(workflow_id, stops)
            steps = total_steps(described.workflow_type)
            return await wait_with_progress(errors, api, workflow_id, steps, stop_at=stops)
        except WorkflowFailureError as exc:
            ended = await api.handle(workflow_id).describe()
            failure = explain(exc, stage_of(ended.typed_search_attributes))
            if output == "json":
                emit(
                    {"workflow_id": workflow_id, "status": "failed", "failure": failure.model_dump(mode="json")}, output
                )
            raise RunFailed(workflow_id, failure) from None

    outcome = run(go())
    if isinstance(outcome, RunStatus):
        waiting(workflow_id, outcome, output)
    print_outcome(outcome, output)


def waiting(workflow_id: str, status: RunStatus, output: str) -> None:
    """A run that waits at a gate for the operator: its status (the gate and how to answer it, the steps, the
    findings with their fixes), then exit 4 (not finished)."""
    if output == "json":
        emit({"workflow_id": workflow_id, "status": "waiting", "run": status.model_dump(mode="json")}, output)
    else:
        console.print(status_view(workflow_id, status))
    gates = ", ".join(gate.name for gate in status.gates)
    errors.print(f"{workflow_id} has not finished: it waits at {gates} (answer it as shown)", highlight=False)
    raise typer.Exit(EXIT_REFUSED)


def stage_of(attributes: TypedSearchAttributes) -> str:
    return attributes.get(STAGE) or ""


def list_runs(
    tenant: Annotated[str | None, typer.Option(help="tenant slug")] = None,
    worker_cluster: Annotated[str | None, typer.Option("--worker", help="worker cluster name")] = None,
    stage: Annotated[str | None, typer.Option(help="stage, e.g. gate:approve_plan")] = None,
    running: Annotated[bool, typer.Option(help="only runs still in progress")] = False,
    limit: int = 100,
    output: OutputOpt = "text",
) -> None:
    """List runs, filtered by tenant, worker cluster or stage through search attributes."""
    clauses = [
        f"TenantSlug = '{tenant}'" if tenant else "",
        f"WorkerCluster = '{worker_cluster}'" if worker_cluster else "",
        f"Stage = '{stage}'" if stage else "",
        "ExecutionStatus = 'Running'" if running else "",
    ]
    query = " AND ".join(c for c in clauses if c)

    async def go() -> None:
        api = await TenantflowClient.connect()
        rows = [
            {
                "id": r.id,
                "type": r.workflow_type,
                "status": r.status.name if r.status else "",
                "stage": stage_of(r.typed_search_attributes),
                "started": str(r.start_time),
                "closed": str(r.close_time or ""),
            }
            for r in await api.list_runs(query, limit)
        ]
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
