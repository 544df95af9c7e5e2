"""``TenantDrift``: the fleet drift check, read-only, run nightly by a Schedule (``tenantflow drift --schedule``).

It reads which tenants are onboarded from their records (``drift.tenants``), then checks each one with a
``drift.tenant`` activity, at most ``concurrency`` at a time, and returns one report per tenant: what is missing,
changed or extra against the tenant's recorded contract. It writes nothing; repair goes through the usual plan
and approve gate (``tenantflow onboard`` with the recorded contract). A tenant whose check keeps failing is
reported with the error; the others are still checked. The ``progress`` query says how many are done.
"""

from __future__ import annotations

import asyncio
import dataclasses

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.drift import DRIFT_WORKFLOW, DriftReport, DriftTarget, FleetDriftInput, FleetDriftReport
    from tenantflow.models.runbook import DRIFT_TENANT, DRIFT_TENANTS

from tenantflow.workflows.steps import STEP_RETRY, execute

READ_RETRY = dataclasses.replace(STEP_RETRY, maximum_attempts=3)
"""A read is retried a few times; a tenant that still cannot be read is reported, and tomorrow's run tries again."""


@workflow.defn(name=DRIFT_WORKFLOW)
class TenantDrift:
    def __init__(self) -> None:
        self._total = 0
        self._done = 0

    @workflow.run
    async def run(self, params: FleetDriftInput) -> FleetDriftReport:
        slugs = await execute(DRIFT_TENANTS, params, retry_policy=READ_RETRY, summary=DRIFT_TENANTS.summary)
        self._total = len(slugs)
        slots = asyncio.Semaphore(params.concurrency)

        async def check(slug: str) -> DriftReport:
            async with slots:
                try:
                    return await execute(
                        DRIFT_TENANT,
                        DriftTarget(records=params.records, slug=slug),
                        retry_policy=READ_RETRY,
                        summary=f"{DRIFT_TENANT.name} [{slug}]",
                    )
                except ActivityError as err:
                    return DriftReport(slug=slug, error=str(err.cause or err))
                finally:
                    self._done += 1

        reports = await asyncio.gather(*(check(slug) for slug in slugs))
        return FleetDriftReport(checked_at=workflow.now(), tenants=list(reports))

    @workflow.query
    def progress(self) -> dict[str, int]:
        """Tenants checked so far, of how many."""
        return {"done": self._done, "total": self._total}
