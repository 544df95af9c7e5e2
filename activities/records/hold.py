"""``records.tenant_holder``: which run holds a tenant's hold (``hold/<slug>``), and whether it still runs.

A run whose claim of the tenant failed (``workflows/tenant_hold.py``) asks Temporal through the worker's own client:
``WorkflowHandle.describe`` of the hold gives its status and its parent (the run that started it as its child),
and the same call on that parent, by run id (an earlier run of the asking run's own workflow id may be the
holder), whether it still runs (https://python.temporal.io/temporalio.client.WorkflowHandle.html#describe). The
server terminates a hold once its parent closed (``ParentClosePolicy.TERMINATE``,
https://docs.temporal.io/parent-close-policy), asynchronously: for a closed holder the activity waits, with backoff
and a few seconds at most, for the hold to close, so that the run claims again rather than refuses. A hold still
running then (Temporal's time-skipping test server does not apply the policy when a parent completes) holds the
tenant for a run that has closed: the activity terminates that run of it (``WorkflowHandle.terminate``, by run id,
so a newer hold is never touched).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.activities.common.registered import defn
from tenantflow.models import runbook
from tenantflow.models.tenant_hold import TenantHolder

SETTLE_DELAYS_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
"""How long to wait, one after the other, for a hold whose holder closed to be terminated by the server."""


async def described(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionDescription | None:
    """``handle`` described; None when Temporal has no such run."""
    try:
        return await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise ApplicationError(f"could not describe {handle.id}: {err.message}", type=TRANSIENT) from None


@defn(runbook.TENANT_HOLDER)
async def tenant_holder(hold_id: str) -> TenantHolder:
    """The hold ``hold_id`` and its parent: the run holding the tenant (the hold itself when it has no parent:
    started by hand). When that run closed, the hold is waited for (:data:`SETTLE_DELAYS_S`) until the server
    has terminated it too, and terminated here if it still runs then: it holds the tenant for nobody."""
    client = activity.client()
    hold = await described(client.get_workflow_handle(hold_id))
    if hold is None or hold.status != WorkflowExecutionStatus.RUNNING:
        return TenantHolder(hold_id=hold_id)
    if hold.parent_id is None:
        return TenantHolder(
            hold_id=hold_id, held=True, holder=hold_id, holder_type=hold.workflow_type, holder_running=True
        )
    parent = await described(client.get_workflow_handle(hold.parent_id, run_id=hold.parent_run_id))
    holder = {
        "hold_id": hold_id,
        "holder": hold.parent_id,
        "holder_run_id": hold.parent_run_id or "",
        "holder_type": parent.workflow_type if parent else "",
    }
    if parent is not None and parent.status == WorkflowExecutionStatus.RUNNING:
        return TenantHolder(held=True, holder_running=True, **holder)
    stale = client.get_workflow_handle(hold_id, run_id=hold.run_id)
    for delay in SETTLE_DELAYS_S:
        await asyncio.sleep(delay)
        now = await described(stale)
        if now is None or now.status != WorkflowExecutionStatus.RUNNING:
            return TenantHolder(**holder)
    try:
        await stale.terminate(f"its holder {hold.parent_id} (run {hold.parent_run_id}) closed")
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:  # not found: it closed meanwhile
            raise ApplicationError(f"could not terminate {hold_id}: {err.message}", type=TRANSIENT) from None
    return TenantHolder(**holder)


ACTIVITIES = [tenant_holder]
