"""Commands of a tenant's life: onboard, offboard (with its purge gate), and the handover sheet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tenantflow.starter.client import TenantflowClient, onboarding_id
from tenantflow.starter.commands.runs import follow_start, gate_command
from tenantflow.starter.contracts import ContractError, load_tenant
from tenantflow.starter.output import OutputOpt, Refused, WideOpt, print_outcome, run


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
        typer.Option(help="the tenant contract; default: the input of the latest tenant/SLUG onboarding run"),
    ] = None,
    purge_data: Annotated[
        bool, typer.Option(help="also delete the Weka org, filesystems and quotas (asks for confirm-purge)")
    ] = False,
    output: OutputOpt = "text",
) -> None:
    """Offboard a tenant: a gated teardown in rollback order; data is kept unless --purge-data."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        tenant = load_tenant(contract) if contract is not None else await api.onboarded_contract(slug)
        if tenant.slug != slug:
            raise ContractError(f"{contract}: is the contract of {tenant.slug}, not {slug}")
        await follow_start(api, await api.start_offboarding(tenant, purge_data), False, output)

    run(go())


def handover(slug: str, output: OutputOpt = "text") -> None:
    """Print the handover sheet of a finished onboarding (exit 4 while it still runs)."""

    async def go() -> Any:
        api = await TenantflowClient.connect()
        workflow_id = onboarding_id(slug)
        if await api.running(workflow_id):
            current = await api.status(workflow_id)
            raise Refused(
                f"{workflow_id} has not finished (stage {current.stage}); see `tenantflow status {workflow_id} --watch`"
            )
        return await api.result(workflow_id)

    print_outcome(run(go()), output)
