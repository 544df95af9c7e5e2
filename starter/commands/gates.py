"""Commands that answer a run's gates: approve or reject a published plan, ``smoke-failed`` (rerun, roll back or
waive), and one command per yes/no gate (:func:`gate_command`: ``confirm-purge``, ``retry-rollback`` here, the
enrollment's in :mod:`starter.commands.worker_clusters`). Each answers as the Temporal client's identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from tenantflow.models.gates import SmokeChoice
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.commands.runs import wait_for_gate
from tenantflow.starter.output import EXIT_BAD_INPUT, OutputOpt, answered, errors, run


def approve(
    workflow_id: str,
    plan_hash: Annotated[str, typer.Option("--plan-hash", help="the hash `status` shows")],
    comment: str = "",
    output: OutputOpt = "text",
) -> None:
    """Approve a published plan (onboarding, enrollment, reset, a renewal) by its exact hash, as the Temporal
    client's identity (TEMPORAL_IDENTITY, the mTLS certificate's subject, or user@host), signed with the SSH key
    TENANTFLOW_APPROVAL_KEY names so that the worker records the approver as verified."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        answered(workflow_id, await api.approve(workflow_id, plan_hash, comment), output)

    run(go())


def reject(workflow_id: str, reason: Annotated[str, typer.Option()], output: OutputOpt = "text") -> None:
    """Reject a published onboarding plan (as the Temporal client's identity): the run ends, nothing is written."""

    async def go() -> None:
        api = await TenantflowClient.connect()
        answered(workflow_id, await api.reject(workflow_id, reason), output)

    run(go())


def gate_command(gate: str, help_text: str) -> Callable[..., None]:
    """The command ``tenantflow <gate-with-dashes> ID``: answer one of a run's yes/no gates."""

    def answer(
        workflow_id: str,
        comment: str = "",
        wait: Annotated[
            bool, typer.Option("--wait", help="wait (up to 5 minutes) for the run to open the gate, then answer it")
        ] = False,
        output: OutputOpt = "text",
    ) -> None:
        async def go() -> None:
            api = await TenantflowClient.connect()
            if wait:
                await wait_for_gate(api, workflow_id, gate)
            answered(workflow_id, await api.answer_gate(workflow_id, gate, comment), output)

        run(go())

    answer.__doc__ = help_text
    return answer


retry_rollback = gate_command(
    "retry_rollback", "Undo again the steps whose undo failed (status lists the objects left); fix their cause first."
)
confirm_purge = gate_command(
    "confirm_purge", "Confirm that offboarding deletes the tenant's Weka data (purge_data runs)."
)


def smoke_failed(
    workflow_id: str,
    choice: Annotated[
        SmokeChoice, typer.Argument(help="rerun (after fixing the node or chart), rollback, or waive (with --reason)")
    ],
    reason: Annotated[
        str, typer.Option(help="why the failures are accepted: needed to waive, shown on the handover")
    ] = "",
    output: OutputOpt = "text",
) -> None:
    """Answer an onboarding that waits at smoke_failed (nothing was rolled back): re-run the smoke checks once the
    node or chart is fixed, roll the tenant back, or waive the failures with a reason."""
    if choice == "waive" and not reason.strip():
        errors.print("[red]waive needs --reason: why the failed smoke checks are accepted[/red]")
        raise typer.Exit(EXIT_BAD_INPUT)

    async def go() -> None:
        api = await TenantflowClient.connect()
        answered(workflow_id, await api.answer_smoke_failed(workflow_id, choice, reason), output)

    run(go())
