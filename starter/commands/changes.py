"""``tenantflow apply CONTRACT``: change an onboarded tenant to a new contract, through the plan gate (issue 17).

``apply`` rather than ``onboard`` on an existing tenant, because it does what onboarding never does: it removes
(users the contract drops, nodes it gives back). It refuses a slug change with the reason (exit 2); the worker
reads the tenant's latest record in the contract's cluster (the recorded contract; ``TenantRecords``, with the
worker's credentials: this process needs only Temporal access); ``apply`` refuses a tenant without an ``onboarded``
record (exit 5: onboard it first), and a cluster the worker cannot read (exit 1, naming the worker's error), then
starts ``TenantChange`` under ``tenant/<slug>`` and prints its plan the way
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
from tenantflow.starter.output import EXIT_NOT_FOUND, OutputOpt, WaitOpt, WideOpt, errors, run
from tenantflow.starter.records import read_by_worker, tenant_on_worker


def apply(
    file: Path,
    wait: WaitOpt = True,
    tenant: Annotated[
        str | None, typer.Option(help="the onboarded tenant to change (default: the contract's slug)")
    ] = None,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Change an onboarded tenant to CONTRACT: a plan of creates, updates and removals to approve."""

    async def go() -> None:
        contract = load_tenant(file)
        refusal = slug_refusal(tenant or contract.slug, contract)
        if refusal:
            raise ContractError(f"{file}: {refusal}")
        api = await TenantflowClient.connect()
        reading = tenant_on_worker(api, contract.cluster, contract.slug)
        record = await read_by_worker(reading, f"the record of {contract.slug}", contract.cluster, f"{file}: cluster")
        if record is None or record.status is not RecordStatus.onboarded:
            state = "no record" if record is None else f"its record says {record.status.value}"
            errors.print(
                f"[red]{contract.slug} is not an onboarded tenant of {contract.cluster.describe()} ({state}); "
                "onboard it first: tenantflow onboard CONTRACT[/red]"
            )
            raise typer.Exit(EXIT_NOT_FOUND)
        await follow_start(api, await api.start_change(contract, record.contract), wait, output, wide)

    run(go())
