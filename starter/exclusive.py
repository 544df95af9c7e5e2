"""The client's early answer when a tenant is already being run: the other run of the tenant is looked up first.

An onboarding (or change) and an offboarding of one slug never run together; their workflow ids differ
(``tenant/<slug>``, ``offboard/<slug>``), so Temporal's id conflict policy cannot keep them apart. The guarantee is
the runs' own: each holds the tenant before any write (``workflows/tenant_hold.py``), whoever started it (a plain
``temporal workflow start``, the lifecycle at expiry), and a run that finds it held ends naming the holder. This
check only spares a tenantflow caller that run: before it starts one, the client looks up the tenant's other run,
and while that runs it starts nothing and says so (:class:`~tenantflow.starter.client.RunAlreadyActive`). Two starts
at the same moment both pass it; the hold then lets exactly one of them run. ``WorkflowHandle.describe`` is the
temporalio client API (https://python.temporal.io/temporalio.client.WorkflowHandle.html).
"""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode


async def running(client: Client, workflow_id: str) -> bool:
    """Whether the latest run of ``workflow_id`` is running."""
    try:
        described = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return described.status == WorkflowExecutionStatus.RUNNING
