"""Commands of a tenant's life: onboard, renew its term, offboard, the handover sheet, the tenants recorded (the
onboarding's smoke_failed gate and the offboarding's purge gate are answered by :mod:`starter.commands.gates`).

``offboard``, ``handover`` and ``tenants`` have the worker read the records (the read-only ``TenantRecords``
workflow, :func:`starter.records.read_on_worker`) in the cluster ``--context`` names as the worker's registry does
(``offboard`` without one: the cluster of the latest onboarding or change run), so they need only Temporal access.
``offboard`` and ``handover`` fall back to the latest onboarding run's history when there is no record. ``renew``
and the term column of ``tenants`` ask the tenant's lifecycle (``lifecycle/SLUG``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from tenantflow.models.lifecycle import MAX_RENEW_DAYS, TermStatus
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.records import RecordStatus
from tenantflow.models.run_ids import lifecycle_id, onboarding_id
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.commands.runs import start_from_file, start_teardown
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.failures import explain
from tenantflow.starter.output import OutputOpt, Refused, WaitOpt, WideOpt, console, emit, errors, print_outcome, run
from tenantflow.starter.records import (
    CurrentContextOpt,
    WorkerClusterOpt,
    named_cluster,
    onboarded_contract,
    read_on_worker,
    recorded_result,
    records_cluster,
)


def onboard(
    file: Path,
    wait: WaitOpt = True,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Start onboarding a tenant; prints the plan and how to approve it."""

    run(start_from_file(file, load_tenant, lambda api, contract: api.start_onboarding(contract), wait, output, wide))


def offboard(
    slug: str,
    contract: Annotated[
        Path | None,
        typer.Option(
            help="the tenant contract; default: the tenant's record (read by the worker in the cluster --context "
            "names, else in that of the latest tenant/SLUG run), else the input of that run"
        ),
    ] = None,
    purge_data: Annotated[
        bool, typer.Option(help="also delete the Weka org, filesystems and quotas (asks for confirm-purge)")
    ] = False,
    kubeconfig: CurrentContextOpt = None,
    context: WorkerClusterOpt = None,
    output: OutputOpt = "text",
) -> None:
    """Offboard a tenant: a gated teardown in rollback order; data is kept unless --purge-data."""

    run(
        start_teardown(
            contract,
            load_tenant,
            lambda api: onboarded_contract(api, named_cluster(kubeconfig, context), slug),
            lambda tenant: tenant.slug,
            slug,
            lambda api, tenant: api.start_offboarding(tenant, purge_data),
            output,
        )
    )


async def recorded_handover(api: TenantflowClient, cluster: KubeTarget, slug: str) -> OnboardingResult | None:
    """The handover of ``slug``'s record in ``cluster``, read by the worker; None when there is none, or (with a
    warning) when the worker cannot read it. Refused when the record says the tenant is no longer onboarded."""
    try:
        found = await read_on_worker(api, cluster, slug)
    except WorkflowFailureError as exc:
        failure = explain(exc)
        errors.print(
            f"the worker cannot read the record of {slug} in {cluster.describe()} ({failure.error_type}: "
            f"{failure.message}); trying the run's history",
            style="yellow",
            markup=False,
        )
        return None
    if not found:
        return None
    record = found[0].record
    if record.status is not RecordStatus.onboarded:
        raise Refused(
            f"{slug} was {record.status.value} by {record.run.workflow_id} at "
            f"{record.run.recorded_at:%Y-%m-%d %H:%M}Z; it has no handover sheet"
        )
    return recorded_result(record)


def handover(
    slug: str, kubeconfig: CurrentContextOpt = None, context: WorkerClusterOpt = None, output: OutputOpt = "text"
) -> None:
    """Print the handover sheet of the tenant's record (read by the worker in the cluster --context names), else of
    its finished onboarding (exit 4 while it runs)."""

    async def go() -> Any:
        cluster = named_cluster(kubeconfig, context)
        api = await TenantflowClient.connect()
        recorded = None if cluster is None else await recorded_handover(api, cluster, slug)
        if recorded is not None:
            return recorded
        workflow_id = onboarding_id(slug)
        if await api.running(workflow_id):
            current = await api.status(workflow_id)
            raise Refused(
                f"{workflow_id} has not finished (stage {current.stage}); see `tenantflow status {workflow_id} --watch`"
            )
        return await api.result(workflow_id)

    print_outcome(run(go()), output)


def renew(
    slug: str,
    days: Annotated[int, typer.Option(min=1, max=MAX_RENEW_DAYS, help="days to add to the term's end")],
    comment: Annotated[str, typer.Option(help="why (kept with the renewal)")] = "",
    output: OutputOpt = "text",
) -> None:
    """Ask to extend a tenant's term by DAYS, as the Temporal client's identity (signed with TENANTFLOW_APPROVAL_KEY):
    the renewal waits at the lifecycle's approve_plan gate until another person approves it (`tenantflow approve
    lifecycle/SLUG --plan-hash H`); then the end moves, the renewal is recorded and reminders start over."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        term = await api.term(slug)
        if term is None:
            raise Refused(f"{slug} has no lifecycle ({lifecycle_id(slug)}): its onboarding has not completed")
        if term.stage != "term:running":
            raise Refused(
                f"the term of {slug} ended ({term.stage}, {term.offboarding or 'no offboarding'}): onboard it again "
                "to start a new term"
            )
        renewed = await api.renew(slug, days, comment)
        pending = renewed.pending_renewal
        if output == "json":
            emit(renewed.model_dump(mode="json"), output)
        elif pending is not None:
            emit(
                f"the renewal of {slug} by {days} days waits for another person's approval (the term still ends "
                f"{renewed.term_end:%Y-%m-%d %H:%M}Z): tenantflow approve {lifecycle_id(slug)} --plan-hash "
                f"{pending.plan_hash}",
                output,
            )
        else:
            by = renewed.renewals[-1].approver if renewed.renewals else api.identity
            emit(f"the term of {slug} now ends {renewed.term_end:%Y-%m-%d %H:%M}Z (+{days} days, by {by})", output)

    run(go())


async def terms(slugs: list[str]) -> dict[str, TermStatus | None]:
    """The term of each tenant from its lifecycle. A tenant whose lifecycle cannot be asked (a running lifecycle
    no worker answers, say) is left out with a warning naming it; the other tenants keep theirs."""
    try:
        api = await TenantflowClient.connect()
    except RPCError as exc:
        errors.print(f"cannot ask Temporal for the terms ({exc.message}); the term column is empty", style="yellow")
        return {}
    found: dict[str, TermStatus | None] = {}

    async def ask(slug: str) -> None:
        try:
            found[slug] = await api.term(slug)
        except RPCError as exc:
            errors.print(
                f"cannot ask Temporal for the term of {slug} ({exc.message}); its term is empty", style="yellow"
            )

    await asyncio.gather(*(ask(slug) for slug in slugs))  # at once: each unanswered query waits its whole timeout
    return found


COLUMNS = ("slug", "status", "version", "term_end", "plan_hash", "approver", "recorded_at")


def tenants(kubeconfig: CurrentContextOpt = None, context: WorkerClusterOpt = None, output: OutputOpt = "text") -> None:
    """List the tenants recorded in a cluster (read by the worker): slug, status, record version, term end (from the
    tenant's lifecycle), plan hash, approver, time."""

    async def go() -> None:
        cluster = records_cluster(kubeconfig, context)
        records = [(r.version, r.record) for r in await read_on_worker(await TenantflowClient.connect(), cluster)]
        term = await terms([r.contract.slug for _, r in records])
        rows: list[dict[str, str | int]] = [
            {
                "slug": r.contract.slug,
                "status": r.status.value,
                "version": version,
                "term_end": term_end(term.get(r.contract.slug)),
                "plan_hash": r.run.plan_hash,
                "approver": r.run.approver,
                "recorded_at": r.run.recorded_at.isoformat(),
                "run_id": r.run.run_id,
            }
            for version, r in records
        ]
        if output == "json":
            emit(rows, output)
            return
        table = Table(*(column.replace("_", " ") for column in COLUMNS))
        for row in rows:
            table.add_row(*(str(row[column]) for column in COLUMNS))
        console.print(table)

    run(go())


def term_end(term: TermStatus | None) -> str:
    """The term's end as ``tenants`` shows it: ``-`` without a lifecycle, ``(expired)`` or ``(offboarded)`` once its
    lifecycle has ended."""
    if term is None:
        return "-"
    return term.term_end.isoformat() + (
        "" if term.stage == "term:running" else f" ({term.stage.removeprefix('term:')})"
    )
