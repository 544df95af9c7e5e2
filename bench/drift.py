"""Figure (f), the drift check: one real lab tenant checked in-process, and a fleet of simulated tenants checked
by the ``TenantDrift`` workflow on the simulated worker (issue 15's goals: a lab tenant in at most 2 s, 1,000
simulated tenants in at most 60 s on 2 cores).

The simulated ``drift.tenant`` (:mod:`bench.fakes`) sleeps the latency one lab tenant's check took (measured in
this run with a lab, else :data:`bench.fakes.LAB_SECONDS`), so the fleet figure measures Temporal, the worker and
the workflow's bounded concurrency, not the external systems.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from pydantic import BaseModel

from tenantflow.models.drift import DRIFT_WORKFLOW, DriftTarget, FleetDriftInput, FleetDriftReport
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.drift import check_tenant


class LabDrift(BaseModel):
    """One onboarded lab tenant's drift check, from its record, with the real activities."""

    slug: str
    seconds: float
    clean: bool
    message: str = ""


class FleetDrift(BaseModel):
    """Simulated tenants checked by one ``TenantDrift`` run: wall time and how many came back."""

    tenants: int
    concurrency: int
    seconds: float
    checked: int
    failed: int


async def lab_drift(contract: TenantContract) -> LabDrift:
    """Check the freshly onboarded ``contract`` (its record is in its own cluster) and time it."""
    started = time.perf_counter()
    report = await asyncio.to_thread(check_tenant, DriftTarget(records=contract.cluster, slug=contract.slug))
    seconds = time.perf_counter() - started
    message = report.error or "; ".join(f"{i.drift.value} {i.layer} {i.label}" for i in report.items)
    return LabDrift(slug=contract.slug, seconds=seconds, clean=report.clean, message=message)


async def fleet_drift(api: TenantflowClient, template: TenantContract, tenants: int, concurrency: int) -> FleetDrift:
    """One ``TenantDrift`` run over ``tenants`` simulated tenants (the simulated ``drift.tenants`` returns the
    slugs it is given), ``concurrency`` at a time."""
    tag = uuid.uuid4().hex[:5]
    params = FleetDriftInput(
        records=template.cluster, slugs=[f"tenant-d{tag}-{n:04d}" for n in range(tenants)], concurrency=concurrency
    )
    started = time.perf_counter()
    report: FleetDriftReport = await api.client.execute_workflow(
        DRIFT_WORKFLOW, params, id=f"drift-bench-{tag}", task_queue=api.task_queue, result_type=FleetDriftReport
    )
    return FleetDrift(
        tenants=tenants,
        concurrency=concurrency,
        seconds=time.perf_counter() - started,
        checked=len(report.tenants) - len(report.failed),
        failed=len(report.failed),
    )
