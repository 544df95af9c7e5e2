"""``tenantflow plan``: the onboarding's read-only preflight and plan, run by the worker as a ``TenantPlan`` workflow.

The worker runs the catalogue's preflight and plan steps (``models/runbook.py``), the ones the onboarding runs,
with the services' credentials it has (:mod:`tenantflow.workflows.plan`); this process needs only Temporal access
(``TEMPORAL_ADDRESS``, ``TENANTFLOW_TASK_QUEUE``). Nothing is written: those steps only read. Each plan is its own
run (:func:`~tenantflow.models.run_ids.plan_id`), so plans of one tenant never refuse each other.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from tenantflow.models.preview import PlanInput, PlanReport
from tenantflow.models.run_ids import plan_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.plan import TenantPlan

PLAN_TIMEOUT = timedelta(minutes=15)
"""How long a plan may take, a worker's pickup included: without a worker on the task queue it ends then."""


async def preflight_and_plan(api: TenantflowClient, contract: TenantContract) -> PlanReport:
    """Run every preflight, then (only if no error was found) every layer's plan, on the worker, as the onboarding
    workflow of ``contract`` would."""
    return await api.client.execute_workflow(
        TenantPlan.run,
        PlanInput(contract=contract),
        id=plan_id(contract.slug, uuid.uuid4().hex[:12]),
        task_queue=api.task_queue,
        execution_timeout=PLAN_TIMEOUT,
        static_summary=f"read-only plan of {contract.slug}",
    )
