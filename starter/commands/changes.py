"""``tenantflow apply CONTRACT``: change an onboarded tenant to a new contract, through the plan gate (issue 17).

``apply`` rather than ``onboard`` on an existing tenant, because it does what onboarding never does: it removes
(users the contract drops, nodes it gives back). It reads the tenant's latest record in the contract's cluster (the
recorded contract), refuses a slug change with the reason (exit 2) and a tenant without an ``onboarded`` record
(exit 5: onboard it first), then starts ``TenantChange`` under ``tenant/<slug>`` and prints its plan the way
``onboard`` does; approve it with ``tenantflow approve tenant/<slug> --plan-hash ...``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tenantflow.models.change import slug_refusal
from tenantflow.models.records import RecordStatus
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.commands.runs import follow_start
from tenantflow.starter.contracts import ContractError, load_tenant
from tenantflow.starter.output import EXIT_NOT_FOUND, KubeconfigOpt, OutputOpt, WaitOpt, WideOpt, errors, run
from tenantflow.starter.records import tenant_record


def apply(
    file: Path,
    kubeconfig: KubeconfigOpt = None,
    wait: WaitOpt = True,
    tenant: Annotated[
        str | None, typer.Option(help="the onboarded tenant to change (default: the contract's slug)")
    ] = None,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Change an onboarded tenant to CONTRACT: a plan of creates, updates and removals to approve."""

    async def go() -> None:
        contract = load_tenant(file, kubeconfig)
        refusal = slug_refusal(tenant or contract.slug, contract)
        if refusal:
            raise ContractError(f"{file}: {refusal}")
        record = await tenant_record(contract.cluster, contract.slug)
        if record is None or record.status is not RecordStatus.onboarded:
            state = "no record" if record is None else f"its record says {record.status.value}"
            errors.print(
                f"[red]{contract.slug} is not an onboarded tenant of {contract.cluster.describe()} ({state}); "
                "onboard it first: tenantflow onboard CONTRACT[/red]"
            )
            raise typer.Exit(EXIT_NOT_FOUND)
        api = await TenantflowClient.connect()
        await follow_start(api, await api.start_change(contract, record.contract), wait, output, wide)

    run(go())
