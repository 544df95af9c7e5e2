"""A waiting renewal's gate in ``TenantLifecycle``: the ``approve_plan`` gate it holds open (what ``status`` shows,
with the commands that answer it) and the notification that it started waiting (``gates.notify``, as every gate's
opening is: ``workflows/gate_waits.py``); the term's end is its deadline and it does not escalate."""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import GateState
    from tenantflow.models.lifecycle import PendingRenewal

from tenantflow.workflows.gate_waits import notify, opened_notice


def renewal_gate(pending: PendingRenewal) -> GateState:
    """The ``approve_plan`` gate ``pending`` holds open in this run, with the commands that answer it."""
    wid = workflow.info().workflow_id
    how = [
        f"tenantflow approve {wid} --plan-hash {pending.plan_hash}",
        f"tenantflow reject {wid} --reason '...'",
    ]
    described = f"renew the term by {pending.days} days, asked for by {pending.requested_by}"
    return GateState(name="approve_plan", description=described, opened_at=pending.at, how_to_answer=how)


async def notify_renewal(pending: PendingRenewal, opening: int, term_end: datetime) -> None:
    """Tell people that ``pending`` waits at ``approve_plan`` (this run's ``opening``-th renewal to): the commands
    that answer it, and that ``term_end`` is its deadline."""
    await notify(opened_notice(renewal_gate(pending), opening, None, term_end))
