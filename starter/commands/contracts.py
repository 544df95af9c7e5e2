"""Commands that read contracts without starting a run: the JSON Schemas, validation, and the read-only plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from temporalio.client import WorkflowFailureError

from tenantflow.models.api import PlanPreview
from tenantflow.models.preview import PlanReport
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError, contract_schemas, load_enrollment, load_tenant
from tenantflow.starter.failures import explain
from tenantflow.starter.output import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_RUN_FAILED,
    OutputOpt,
    WideOpt,
    console,
    emit,
    errors,
    run,
)
from tenantflow.starter.render import findings_table, print_plan


def schema(
    out: Annotated[Path | None, typer.Option(help="write one <Name>.schema.json per model here")] = None,
) -> None:
    """Print the JSON Schema of every workflow input, for services in other languages."""
    schemas = contract_schemas()
    if out is None:
        sys.stdout.write(json.dumps(schemas, indent=2) + "\n")
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, body in schemas.items():
        (out / f"{name}.schema.json").write_text(json.dumps(body, indent=2) + "\n")
    console.print(f"wrote {len(schemas)} schemas to {out}")


def validate(
    file: Path,
    kind: Annotated[str, typer.Option(help="tenant or worker")] = "tenant",
) -> None:
    """Check a contract file without touching anything; exit 2 with every problem listed."""
    try:
        model = load_tenant(file) if kind == "tenant" else load_enrollment(file)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    console.print(f"[green]{file}: valid {type(model).__name__}[/green]")


def plan(
    file: Path,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Read-only preflight and plan of a tenant contract, run by the worker without starting a run; exit 3 on
    preflight errors."""
    from tenantflow.starter.plan import preflight_and_plan

    try:
        contract = load_tenant(file)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None

    async def go() -> PlanReport:
        try:
            return await preflight_and_plan(await TenantflowClient.connect(), contract)
        except WorkflowFailureError as exc:  # a service the worker cannot reach or is not configured for
            failure = explain(exc)  # the message names the step (workflows/plan.py)
            errors.print(
                f"cannot plan: {failure.error_type}: {failure.message} (the worker reads every service: "
                "set the service's settings in the worker's configuration)",
                style="red",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(EXIT_ERROR) from None

    report = run(go())
    if output == "json":
        emit(PlanPreview.of(report).model_dump(mode="json"), output)
    else:
        problems = [f for f in report.findings if not f.ok]
        if problems:
            console.print(findings_table(problems))
        if report.plan is not None:
            print_plan(console, report.plan, wide)
            console.print(f"\nNothing was written. Start the run with: tenantflow onboard {file}")
    if report.errors:
        errors.print(f"[red]preflight failed with {len(report.errors)} error(s); nothing was written[/red]")
        raise typer.Exit(EXIT_RUN_FAILED)
