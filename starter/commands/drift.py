"""``tenantflow drift``: how onboarded tenants differ from their recorded contracts, and its nightly schedule.

``drift SLUG`` or ``drift --all`` checks, in this process, the tenants recorded in the cluster of
``--kubeconfig``/``--context`` (the operator's kubeconfig, as for the other commands reading records; the tenants'
own clusters come from this process's cluster registry, ``TENANTFLOW_KUBECONFIG``/``TENANTFLOW_CLUSTERS_FILE``)
(:mod:`starter.drift`) and prints one row per object that is missing, changed or extra (80 columns), or JSON with
``-o json``. Exit 0: no drift; 3: drift; 1: a tenant could not be checked (and none drifted); 4: the tenant's
record says it is no longer onboarded; 5: no record of the tenant. ``drift --schedule`` creates (or updates) the
Temporal Schedule that runs the ``TenantDrift`` workflow nightly on the worker: it names the records' cluster
(``--context``, else the kubeconfig's current context) as the worker's cluster registry names it, never a
kubeconfig path, which the worker would refuse. Repair: ``tenantflow onboard`` with the
recorded contract, through the usual plan and approve gate.
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
from tenantflow.starter.records import ContextOpt, KubeconfigOpt, records_target, tenant_record

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


async def selected(target: KubeTarget, slug: str | None, every: bool) -> list[str]:
    """The slugs to check: ``slug`` (refused unless its record says onboarded), or none for every onboarded one."""
    if every == (slug is not None):
        raise ContractError("name one tenant (drift SLUG) or pass --all")
    if slug is None:
        return []
    record = await tenant_record(target, slug)
    if record is None:
        errors.print(f"[red]no record of {slug} in {target.describe()}[/red]")
        raise typer.Exit(EXIT_NOT_FOUND)
    if record.status is not RecordStatus.onboarded:
        raise Refused(f"{slug} was {record.status.value} by {record.run.workflow_id}: nothing to check")
    return [slug]


def schedule_cluster(kubeconfig: str | None, context: str | None) -> KubeTarget:
    """The records' cluster as the schedule names it: ``--context`` (else the kubeconfig's current context), a
    cluster of the worker's registry; the schedule never carries a kubeconfig path."""
    if context:
        return KubeTarget(context=context)
    target = records_target(kubeconfig, context)
    if target is None:
        raise ContractError(
            "--schedule: pass --context CLUSTER, the worker's cluster registry name of the cluster holding the records"
        )
    return KubeTarget(context=target.context)


def drift(
    slug: Annotated[str | None, typer.Argument(help="the tenant to check")] = None,
    every: Annotated[bool, typer.Option("--all", help="every onboarded tenant recorded in the cluster")] = False,
    schedule: Annotated[
        bool, typer.Option("--schedule", help="create or update the nightly Temporal Schedule, then exit")
    ] = False,
    cron: Annotated[str, typer.Option(help=NIGHTLY_HELP)] = NIGHTLY,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="tenants checked at once")] = DEFAULT_CONCURRENCY,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = "text",
) -> None:
    """Compare onboarded tenants with their recorded contracts: missing, changed and extra objects (exit 3 on drift)."""
    from tenantflow.starter.drift import check_fleet, ensure_schedule, use_configured_services

    async def go() -> FleetDriftReport | str:
        if schedule:
            cluster = schedule_cluster(kubeconfig, context)
            return await ensure_schedule(
                await TenantflowClient.connect(), FleetDriftInput(records=cluster, concurrency=concurrency), cron
            )
        target = records_target(kubeconfig, context)
        if target is None:
            raise ContractError("no kubeconfig for the records: pass --kubeconfig or export TENANTFLOW_KUBECONFIG")
        slugs = await selected(target, slug, every)
        return check_fleet(FleetDriftInput(records=target, slugs=slugs, concurrency=concurrency))

    use_configured_services()
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
