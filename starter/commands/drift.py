"""``tenantflow drift``: how onboarded tenants differ from their recorded contracts, and its nightly schedule.

``drift SLUG`` or ``drift --all`` has the worker check the tenants recorded in the records' cluster: ``--context``
names it as the worker's cluster registry does (else the current context of ``--kubeconfig``/
``TENANTFLOW_KUBECONFIG``, :func:`starter.records.records_cluster`). The worker reads the record of ``SLUG``
(``TenantRecords``) and checks the tenants (``TenantDrift``, :mod:`starter.drift`) with its own credentials: this
process needs only Temporal access. It prints one row per object that is missing, changed or extra (80 columns),
or JSON with ``-o json``. Exit 0: no drift; 3: drift; 1: a tenant could not be checked (and none drifted); 4: the
tenant's record says it is no longer onboarded; 5: no record of the tenant. ``drift --schedule`` creates (or
updates) the Temporal Schedule that runs ``TenantDrift`` nightly on the worker, naming the same cluster, never a
kubeconfig path, which the worker would refuse. Repair: ``tenantflow onboard`` with the recorded contract, through
the usual plan and approve gate.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from tenantflow.models.drift import DEFAULT_CONCURRENCY, DRIFT_SCHEDULE_ID, NIGHTLY, FleetDriftInput, FleetDriftReport
from tenantflow.models.records import RecordStatus
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.output import (
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_RUN_FAILED,
    OutputOpt,
    Refused,
    console,
    emit,
    errors,
    run,
)
from tenantflow.starter.records import CurrentContextOpt, WorkerClusterOpt, read_on_worker, records_cluster

NIGHTLY_HELP = "cron expression of the schedule (UTC), with --schedule"


def drift_table(report: FleetDriftReport) -> Table:
    """One row per drifted object, one per clean tenant and one per tenant that could not be checked."""
    table = Table("tenant", "layer", "drift", "object", "detail", expand=False)
    for tenant in report.tenants:
        if tenant.error:
            table.add_row(tenant.slug, "", "[red]error[/red]", "", tenant.error)
        elif tenant.clean:
            table.add_row(tenant.slug, "", "[green]clean[/green]", "", "")
        for item in tenant.items:
            table.add_row(tenant.slug, item.layer, f"[yellow]{item.drift.value}[/yellow]", item.label, item.detail)
    return table


def exit_code(report: FleetDriftReport) -> int:
    return EXIT_RUN_FAILED if report.drifted else EXIT_ERROR if report.failed else 0


async def selected(api: TenantflowClient, cluster: KubeTarget, slug: str | None, every: bool) -> list[str]:
    """The slugs to check: ``slug`` (refused unless its record says onboarded), or none for every onboarded one."""
    if every == (slug is not None):
        raise ContractError("name one tenant (drift SLUG) or pass --all")
    if slug is None:
        return []
    found = await read_on_worker(api, cluster, slug)
    if not found:
        errors.print(f"[red]no record of {slug} in {cluster.describe()}[/red]")
        raise typer.Exit(EXIT_NOT_FOUND)
    record = found[0].record
    if record.status is not RecordStatus.onboarded:
        raise Refused(f"{slug} was {record.status.value} by {record.run.workflow_id}: nothing to check")
    return [slug]


def drift(
    slug: Annotated[str | None, typer.Argument(help="the tenant to check")] = None,
    every: Annotated[bool, typer.Option("--all", help="every onboarded tenant recorded in the cluster")] = False,
    schedule: Annotated[
        bool, typer.Option("--schedule", help="create or update the nightly Temporal Schedule, then exit")
    ] = False,
    cron: Annotated[str, typer.Option(help=NIGHTLY_HELP)] = NIGHTLY,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="tenants checked at once")] = DEFAULT_CONCURRENCY,
    kubeconfig: CurrentContextOpt = None,
    context: WorkerClusterOpt = None,
    output: OutputOpt = "text",
) -> None:
    """Compare onboarded tenants with their recorded contracts: missing, changed and extra objects (exit 3 on drift)."""
    from tenantflow.starter.drift import check_on_worker, ensure_schedule

    async def go() -> FleetDriftReport | str:
        cluster = records_cluster(kubeconfig, context)
        api = await TenantflowClient.connect()
        if schedule:
            return await ensure_schedule(api, FleetDriftInput(records=cluster, concurrency=concurrency), cron)
        slugs = await selected(api, cluster, slug, every)
        return await check_on_worker(api, FleetDriftInput(records=cluster, slugs=slugs, concurrency=concurrency))

    outcome = run(go())
    if isinstance(outcome, str):
        emit(
            {"schedule_id": DRIFT_SCHEDULE_ID, "schedule": outcome, "cron": cron}
            if output == "json"
            else (f"schedule {DRIFT_SCHEDULE_ID} {outcome}: TenantDrift at '{cron}' (UTC)"),
            output,
        )
        return
    if output == "json":
        emit(outcome.model_dump(mode="json") | {"drifted": bool(outcome.drifted)}, output)
    else:
        console.print(drift_table(outcome))
        console.print(
            f"{len(outcome.tenants)} tenant(s) checked: {len(outcome.drifted)} drifted, "
            f"{len(outcome.failed)} not checked. Repair: tenantflow onboard with the recorded contract.",
            markup=False,
        )
    raise typer.Exit(exit_code(outcome))
