"""One run per tenant at a time: an onboarding (or change) and an offboarding of one slug never run together.

Their workflow ids differ (``tenant/<slug>``, ``offboard/<slug>``), so Temporal's id conflict policy cannot keep
them apart. Each start is therefore checked right after it is made, against the other run of the tenant
(register, then look): when both run, the one that started second (by the server's start time, the workflow id
breaking a tie) terminates itself before its plan gate, that is before any write, and the caller is told which
run holds the tenant. Two starts at the same moment see each other and exactly one of them withdraws.
``WorkflowHandle.describe`` and ``terminate`` are the temporalio client API
(https://python.temporal.io/temporalio.client.WorkflowHandle.html).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode


async def withdrawn_for(client: Client, mine: WorkflowHandle[Any, Any], rival_id: str) -> bool:
    """True when ``rival_id`` runs and started before ``mine``; ``mine`` is then terminated (it has written
    nothing: a run reads and waits for approval first)."""
    try:
        rival = await client.get_workflow_handle(rival_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    if rival.status != WorkflowExecutionStatus.RUNNING:
        return False
    own = await mine.describe()
    if (own.start_time, own.id) < (rival.start_time, rival.id):
        return False
    await mine.terminate(f"withdrawn before any write: {rival_id} of the same tenant is in progress")
    return True
