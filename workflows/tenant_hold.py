"""One run per tenant, kept by Temporal: ``TenantHold`` and the claim every tenant run makes before any write.

A tenant's onboarding and change (``tenant/<slug>``) and its offboarding (``offboard/<slug>``) have different
workflow ids, so Temporal's id conflict policy alone cannot keep them apart; a check by the starting client can be
skipped (a plain ``temporal workflow start``, a client that dies between its start and its check, the lifecycle's
own offboarding at expiry). So each of them (runs with :data:`HOLD_PATCH`) first starts the tenant's hold, a child
workflow of id ``hold/<slug>`` (:func:`~tenantflow.models.run_ids.hold_id`) that only waits, with
``ParentClosePolicy.TERMINATE``: the server starts at most one running workflow per id, so at most one run holds
the tenant, and the hold ends with the run that started it, however that run ends
(https://docs.temporal.io/parent-close-policy, https://docs.temporal.io/workflow-execution/workflowid-runid).

A run that finds the hold taken (``WorkflowAlreadyStartedError``) asks who holds it (``records.tenant_holder``):

- the holder runs: the run ends before any write with the non-retryable failure ``TenantHeld`` naming the holder
  and what to do; the offboarding the lifecycle starts at expiry waits instead (``lifecycle.wait_tenant_run`` on
  the holder, again while it runs) and then claims, as the lifecycle waited for a running change before;
- the holder is this very run (a start of the hold that took effect though the run was told it had not): the
  run holds the tenant already and goes on, rather than refusing itself; recorded answers without the holder's
  run id never match, so older histories replay as before;
- the holder closed: the server applies the parent-close policy asynchronously, so the hold may outlive its parent
  a moment; the activity waits for it with backoff (real time, no workflow timer), terminates it if it still runs
  then (it holds the tenant for nobody), and the claim is tried again, :data:`CLAIM_TRIES` times at most (then
  ``TenantHoldStuck``).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import TenantRunWait
    from tenantflow.models.run_ids import hold_id
    from tenantflow.models.runbook import TENANT_HOLDER, TENANT_RUN_WAIT, WAIT_TENANT_RUN
    from tenantflow.models.tenant_hold import TenantHolder

from tenantflow.workflows.run_state import RunState

HOLD_PATCH = "tenant-hold"
"""Runs recorded before a tenant run claimed the tenant's hold replay without the claim."""
CLAIM_TRIES = 6
"""How many times a claim is tried while the hold outlives its closed holder (``records.tenant_holder`` waits a few
seconds each time for the server to terminate it)."""


@workflow.defn(name="TenantHold")
class TenantHold:
    """The tenant's hold: runs, doing nothing, until the server terminates it with the run that started it."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


def held_by(holder: TenantHolder, slug: str) -> ApplicationError:
    """The failure of a run that found ``slug`` held by ``holder``, a running run: nothing was written."""
    me = workflow.info().workflow_id
    kind = f" ({holder.holder_type})" if holder.holder_type else ""
    return ApplicationError(
        f"{holder.holder}{kind} of the same tenant is in progress and holds it ({holder.hold_id}), so {me} ended "
        f"before any write; wait for it to end (`tenantflow status {holder.holder}`) or cancel it first, then start "
        "again",
        type="TenantHeld",
        non_retryable=True,
    )


def stuck(holder: TenantHolder) -> ApplicationError:
    """The failure of a run whose claim kept failing though the holder had closed."""
    return ApplicationError(
        f"{holder.hold_id} still runs though {holder.holder or 'its holder'} closed; nothing was written. If it "
        f"stays, terminate it (`temporal workflow terminate --workflow-id {holder.hold_id}`) and start again",
        type="TenantHoldStuck",
        non_retryable=True,
    )


async def claim(state: RunState, slug: str, wait: bool = False) -> None:
    """Hold the tenant ``slug`` for this run until it closes, before any write; refuse (raise :func:`held_by`)
    while another run holds it, or with ``wait`` wait for that run to end."""
    hold = hold_id(slug)
    me = workflow.info().workflow_id
    tries = 0
    while True:
        try:
            await workflow.start_child_workflow(
                TenantHold.run,
                id=hold,
                parent_close_policy=ParentClosePolicy.TERMINATE,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                static_summary=f"{me} holds tenant {slug}",
            )
            return
        except WorkflowAlreadyStartedError:
            pass
        seen = await state.steps.run(TENANT_HOLDER, hold, local=True)
        if seen.held and (seen.holder, seen.holder_run_id) == (me, workflow.info().run_id):
            return
        if seen.held and seen.holder_running:
            if not wait:
                error = held_by(seen, slug)
                state.gates.set_stage("refused", error.message)
                raise error
            state.gates.set_stage("waiting", f"{seen.holder} holds tenant {slug}: waiting for it to end")
            waited = TenantRunWait(workflow_id=seen.holder, wait_s=int(TENANT_RUN_WAIT.total_seconds()))
            await state.steps.run(WAIT_TENANT_RUN, waited, summary=f"wait while {seen.holder} holds {slug}")
            continue
        tries += 1
        if tries >= CLAIM_TRIES:
            raise stuck(seen)
