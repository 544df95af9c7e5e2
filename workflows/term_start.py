"""How a completed onboarding starts its tenant's term: the ``TenantLifecycle`` (``workflows/lifecycle.py``) as an
abandoned child (it outlives the onboarding), id ``lifecycle/<slug>``, ending the contract's ``capacity.term_days``
after now."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import LifecycleInput
    from tenantflow.models.run_ids import lifecycle_id
    from tenantflow.models.tenant import TenantContract

from tenantflow.workflows.lifecycle import TenantLifecycle


async def start_lifecycle(contract: TenantContract) -> str:
    """Start the tenant's lifecycle as an abandoned child (it outlives the caller); what happened, in words."""
    slug = contract.slug
    term_end = workflow.now() + timedelta(days=contract.capacity.term_days)
    child = lifecycle_id(slug)
    try:
        await workflow.start_child_workflow(
            TenantLifecycle.run,
            LifecycleInput(contract=contract, term_end=term_end),
            id=child,
            parent_close_policy=ParentClosePolicy.ABANDON,
            static_summary=f"Term of {slug}: {contract.capacity.term_days} days, ends {term_end:%Y-%m-%d}",
            static_details=f"Keeps the term of tenant `{slug}`: reminders before it ends, "
            f"`tenantflow renew {slug} --days N` to extend it, at its end `offboard/{slug}` (gated).\n\n"
            f"- started by: `{workflow.info().workflow_id}`",
        )
    except WorkflowAlreadyStartedError:
        return (
            f"{child} already keeps the term of {slug} (unchanged); extend it with `tenantflow renew {slug} --days N`"
        )
    return f"{child} keeps the term of {slug}: it ends {term_end:%Y-%m-%d %H:%M}Z"
