"""What a tenant's lifecycle does when its term ends: which contract it offboards, and the offboarding it starts.

:func:`latest_contract` (runs with ``LATEST_CONTRACT_PATCH``) first waits (at most ``runbook.TENANT_RUN_WAIT``)
while the tenant's onboarding or change runs, then reads the contract of the tenant's latest record (users a
``tenantflow apply`` added since the onboarding included). What it could not establish (the run still running, the
wait or the record unreadable, no record) becomes a note for the teardown plan, and the lifecycle's own contract is
offboarded when there is no readable record; :func:`settling` is what the lifecycle's status says meanwhile.
:func:`start_offboarding` starts the tenant's ``TenantOffboarding`` (an abandoned child, id ``offboard/<slug>``),
which waits at its ``approve_plan`` gate: nothing is removed until that plan is approved.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import TenantRunWait
    from tenantflow.models.offboarding import OffboardingInput
    from tenantflow.models.records import RecordKey
    from tenantflow.models.run_ids import onboarding_id
    from tenantflow.models.runbook import LATEST_TENANT, TENANT_RUN_WAIT, WAIT_TENANT_RUN
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.steps import StepTracker, error_text

HOURS = f"{TENANT_RUN_WAIT / timedelta(hours=1):g}h"
"""The longest wait for the tenant's running onboarding or change, in words."""


def settling(slug: str) -> str:
    """What the status of the expired term of ``slug`` says while :func:`latest_contract` waits and reads."""
    return f"the term ended; waiting (at most {HOURS}) while {onboarding_id(slug)} runs, then reading the latest record"


async def latest_contract(steps: StepTracker, held: TenantContract) -> tuple[TenantContract, list[str], str]:
    """The contract to offboard at expiry, the notes for the teardown plan (what could not be established) and
    where the contract came from: first wait (bounded) while the tenant's onboarding or change runs, then read the
    contract of its latest record; ``held`` (the lifecycle's) when there is none or it is unreadable."""
    slug = held.slug
    run = onboarding_id(slug)
    notes: list[str] = []
    try:
        wait = TenantRunWait(workflow_id=run, wait_s=int(TENANT_RUN_WAIT.total_seconds()))
        seen = await steps.run(WAIT_TENANT_RUN, wait, summary=f"wait while {run} runs (at most {HOURS})")
        if seen.running:
            notes.append(
                f"{run} ({seen.workflow_type}) was still running after {HOURS}: what it changes from now on is "
                f"not in this plan; reject it and offboard again (`tenantflow offboard {slug}`) once {run} ends"
            )
    except ActivityError as err:
        notes.append(f"whether {run} runs could not be read ({error_text(err)}): a change of it may be running")
    kept = "the contract the lifecycle holds (from the onboarding that started it)"
    try:
        latest = await steps.run(LATEST_TENANT, RecordKey.of_tenant(held.cluster, slug))
    except ActivityError as err:
        notes.append(
            f"the tenant's latest record could not be read ({error_text(err)}): this offboards {kept}, so users "
            f"added since by `tenantflow apply` are not in it; check `tenantflow handover {slug}` before approving"
        )
        return held, notes, ""
    if latest.contract is None:
        notes.append(f"the cluster holds no record of {slug}: this offboards {kept}")
        return held, notes, ""
    return latest.contract, notes, f"contract: the tenant's latest record, written by `{latest.recorded_by}`"


async def start_offboarding(
    slug: str, term_end: datetime, child: str, arg: OffboardingInput, memo: dict[str, str] | None, source: str
) -> str:
    """Start the offboarding ``child`` of ``slug``, whose term ended at ``term_end``, with ``arg`` as an abandoned
    child (it outlives the lifecycle) carrying ``memo``, its details naming the contract's ``source`` and the
    plan's notes; what happened, in words."""
    try:
        await workflow.start_child_workflow(
            TenantOffboarding.run,
            arg,
            id=child,
            parent_close_policy=ParentClosePolicy.ABANDON,
            memo=memo,
            static_summary=f"Offboard {slug}: its term ended {term_end:%Y-%m-%d}",
            static_details=f"Offboards tenant `{slug}` because its term ended; Weka data kept. Nothing is "
            f"removed until its teardown plan is approved (`tenantflow approve {child} --plan-hash "
            f"...`); reject it to keep the tenant.\n\n- started by: `{workflow.info().workflow_id}`"
            + "".join(f"\n- {line}" for line in ([source] if source else []) + arg.notes),
        )
    except WorkflowAlreadyStartedError:
        return f"offboarding {child} was already running"
    return f"offboarding {child} was started and waits at its approve_plan gate"
