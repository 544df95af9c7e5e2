"""``tenantflow bench``: the command, offered to the ``tenantflow`` CLI through the entry point group
``tenantflow.commands`` (the bench sits above the starter: it drives runs with the starter's client)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.extras import require_extra
from tenantflow.starter.output import EXIT_RUN_FAILED, OutputOpt, console, emit, errors, run


def bench(
    tenants: Annotated[int, typer.Option(help="concurrent onboardings for figure (b)")] = 100,
    gate_runs: Annotated[int, typer.Option(help="onboardings on an idle worker for figure (e)")] = 5,
    latency_ms: Annotated[
        float | None,
        typer.Option(help="one latency for every simulated activity (default: the latencies measured against the lab)"),
    ] = None,
    max_activities: Annotated[
        int | None,
        typer.Option(help="activity slots of the bench worker (default: one per concurrent onboarding, at least 64)"),
    ] = None,
    lab_dir: Annotated[
        Path | None,
        typer.Option(
            help="a running lab (`tenantflow lab up`): (a), (c) and (d) then use the real activities against it"
        ),
    ] = None,
    tax_pairs: Annotated[
        int, typer.Option(help="with --lab-dir: onboardings through Temporal and direct for (c), in A-B-B-A order")
    ] = 2,
    log_dir: Annotated[Path | None, typer.Option(help="where the bench workers write their logs")] = None,
    drift_tenants: Annotated[int, typer.Option(help="simulated tenants of the fleet drift check, figure (f)")] = 1000,
    users_curve: Annotated[
        str, typer.Option(help="with --lab-dir: tenant sizes (users) of the users curve, figure (g); '' skips it")
    ] = "3,30,300",
    output: OutputOpt = "text",
) -> None:
    """Print the benchmark figures (see bench/figures.py); needs a Temporal server (TEMPORAL_ADDRESS).

    (a) one onboarding, (b) concurrent onboardings, (c) the durability tax, (d) history events, (e) gate latency,
    (f) the drift check, (g) the users curve.

    Exit code 3 when an onboarding failed or the lab could not be cleaned up.
    """
    require_extra("lab", "tenantflow bench")
    from tenantflow.bench.figures import bench as measure
    from tenantflow.bench.report import ROW_KEYS, describe_machine, machine, report_rows, summary
    from tenantflow.lab.endpoints import LabEndpoints
    from tenantflow.worker.config import TemporalSettings
    from tenantflow.worker.temporal import connect

    example = Path(__file__).resolve().parents[1] / "examples" / "tenant-foo.yaml"
    lab = LabEndpoints.load(lab_dir) if lab_dir else None
    template = load_tenant(example)

    async def go() -> Any:
        client = await connect(TemporalSettings())
        with errors.status(f"benchmarking: {'lab runs, then ' if lab else ''}{tenants} concurrent onboardings"):
            return await measure(
                client,
                template,
                tenants,
                gate_runs,
                latency_ms / 1000 if latency_ms is not None else None,
                max_activities,
                lab,
                tax_pairs,
                log_dir,
                drift_tenants,
                sizes,
            )

    sizes = users_sizes(users_curve)
    before = machine()
    figures = run(go())
    rows = report_rows(figures)
    facts = summary(figures) | {
        "machine": {"before": before, "after": machine()},
        "rows": [dict(zip(ROW_KEYS, row, strict=True)) for row in rows],
    }
    if output == "json":
        emit(facts, output)
    else:
        table = Table(title="tenantflow bench", caption=describe_machine(facts["machine"]))
        for column in ROW_KEYS:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    if not facts["ok"]:
        raise typer.Exit(EXIT_RUN_FAILED)


def users_sizes(value: str) -> tuple[int, ...]:
    """``3,30,300`` as sizes; a clear error naming ``--users-curve`` otherwise."""
    try:
        sizes = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a comma-separated list of user counts, e.g. 3,30,300", param_hint="--users-curve"
        ) from None
    if any(not 1 <= n <= 500 for n in sizes):
        raise typer.BadParameter(f"{value!r}: a tenant has 1 to 500 users", param_hint="--users-curve")
    return sizes
