"""Commands of a tenant's life: onboard, offboard (with its purge gate), the handover sheet, the tenants recorded.

``offboard``, ``handover`` and ``tenants`` read the tenant records in the cluster (:mod:`starter.records`);
``offboard`` and ``handover`` fall back to the latest onboarding run's history when there is none."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.records import RecordStatus
from tenantflow.starter.client import TenantflowClient, onboarding_id
from tenantflow.starter.commands.runs import follow_start, gate_command
from tenantflow.starter.contracts import ContractError, load_tenant
from tenantflow.starter.output import OutputOpt, Refused, WideOpt, console, emit, print_outcome, run
from tenantflow.starter.records import (
    ContextOpt,
    KubeconfigOpt,
    onboarded_contract,
    records_target,
    tenant_record,
    tenant_records,
)


def onboard(
    file: Path,
    wait: Annotated[bool, typer.Option(help="wait for the plan and print it")] = True,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Start onboarding a tenant; prints the plan and how to approve it."""

    async def go() -> None:
        contract = load_tenant(file)
        api = await TenantflowClient.connect()
        await follow_start(api, await api.start_onboarding(contract), wait, output, wide)

    run(go())


confirm_purge = gate_command(
    "confirm_purge", "Confirm that offboarding deletes the tenant's Weka data (purge_data runs)."
)


def offboard(
    slug: str,
    contract: Annotated[
        Path | None,
        typer.Option(
            help="the tenant contract; default: the tenant's record in its cluster, else the input of the latest "
            "tenant/SLUG onboarding run"
        ),
    ] = None,
    purge_data: Annotated[
        bool, typer.Option(help="also delete the Weka org, filesystems and quotas (asks for confirm-purge)")
    ] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = "text",
) -> None:
    """Offboard a tenant: a gated teardown in rollback order; data is kept unless --purge-data."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        tenant = (
            load_tenant(contract)
            if contract is not None
            else await onboarded_contract(api, records_target(kubeconfig, context), slug)
        )
        if tenant.slug != slug:
            raise ContractError(f"{contract}: is the contract of {tenant.slug}, not {slug}")
        await follow_start(api, await api.start_offboarding(tenant, purge_data), False, output)

    run(go())


def handover(
    slug: str, kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, output: OutputOpt = "text"
) -> None:
    """Print the handover sheet of the tenant's record, else of its finished onboarding (exit 4 while it runs)."""

    async def go() -> Any:
        record = await tenant_record(records_target(kubeconfig, context), slug)
        if record is not None and record.status is not RecordStatus.onboarded:
            raise Refused(
                f"{slug} was {record.status.value} by {record.run.workflow_id} at "
                f"{record.run.recorded_at:%Y-%m-%d %H:%M}Z; it has no handover sheet"
            )
        if record is not None:
            return OnboardingResult(
                slug=slug,
                status="completed",
                plan_hash=record.run.plan_hash,
                applied=record.applied,
                handover=record.handover,
            )
        api = await TenantflowClient.connect()
        workflow_id = onboarding_id(slug)
        if await api.running(workflow_id):
            current = await api.status(workflow_id)
            raise Refused(
                f"{workflow_id} has not finished (stage {current.stage}); see `tenantflow status {workflow_id} --watch`"
            )
        return await api.result(workflow_id)

    print_outcome(run(go()), output)


COLUMNS = ("slug", "status", "version", "plan_hash", "approver", "recorded_at")


def tenants(kubeconfig: KubeconfigOpt = None, context: ContextOpt = None, output: OutputOpt = "text") -> None:
    """List the tenants recorded in a cluster: slug, status, record version, plan hash, approver, time."""

    async def go() -> None:
        target = records_target(kubeconfig, context)
        if target is None:
            raise ContractError("no kubeconfig: pass --kubeconfig or export TENANTFLOW_KUBECONFIG")
        rows: list[dict[str, str | int]] = [
            {
                "slug": r.contract.slug,
                "status": r.status.value,
                "version": version,
                "plan_hash": r.run.plan_hash,
                "approver": r.run.approver,
                "recorded_at": r.run.recorded_at.isoformat(),
                "run_id": r.run.run_id,
            }
            for version, r in await tenant_records(target)
        ]
        if output == "json":
            emit(rows, output)
            return
        table = Table(*(column.replace("_", " ") for column in COLUMNS))
        for row in rows:
            table.add_row(*(str(row[column]) for column in COLUMNS))
        console.print(table)

    run(go())
