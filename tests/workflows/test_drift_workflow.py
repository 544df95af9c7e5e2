"""``TenantDrift`` on the dev server with stand-in activities: every recorded tenant is checked, never more than
``concurrency`` at a time, and a tenant whose check keeps failing is reported with its error while the rest are
checked."""

from __future__ import annotations

import asyncio
import uuid

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.models.drift import (
    DRIFT_WORKFLOW,
    DriftItem,
    DriftKind,
    DriftReport,
    DriftTarget,
    FleetDriftInput,
    FleetDriftReport,
)
from tenantflow.models.runbook import DRIFT_TENANT, DRIFT_TENANTS
from tenantflow.models.targets import KubeTarget
from tenantflow.workflows.drift import TenantDrift

SLUGS = [f"tenant-{n:02d}" for n in range(12)]
RECORDS = KubeTarget(context="records")


class Fleet:
    """Twelve recorded tenants: tenant-03 drifted, tenant-07 cannot be read."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.attempts: dict[str, int] = {}
        self.full = asyncio.Event()
        """Set once three checks run at once: the first three wait for it, so the bound is reached, not raced."""

    def activities(self) -> list[object]:
        @activity.defn(name=DRIFT_TENANTS.name)
        async def tenants(inp: FleetDriftInput) -> list[str]:
            assert inp.records == RECORDS
            return SLUGS

        @activity.defn(name=DRIFT_TENANT.name)
        async def tenant(target: DriftTarget) -> DriftReport:
            self.attempts[target.slug] = self.attempts.get(target.slug, 0) + 1
            self.running += 1
            self.most = max(self.most, self.running)
            if self.running == 3:
                self.full.set()
            try:
                await asyncio.wait_for(self.full.wait(), 20)
                if target.slug == "tenant-07":
                    raise ApplicationError("slurmctld does not answer", type="SlurmCommandFailed")
                items = (
                    [DriftItem(layer="slurm", kind="user", name="omar", drift=DriftKind.missing)]
                    if target.slug == "tenant-03"
                    else []
                )
                return DriftReport(slug=target.slug, items=items)
            finally:
                self.running -= 1

        return [tenants, tenant]


async def test_every_tenant_is_checked_with_bounded_concurrency_and_failures_reported(
    dev_env: WorkflowEnvironment,
) -> None:
    fleet = Fleet()
    queue = f"drift-{uuid.uuid4().hex[:8]}"
    async with Worker(dev_env.client, task_queue=queue, workflows=[TenantDrift], activities=fleet.activities()):
        report = await dev_env.client.execute_workflow(
            DRIFT_WORKFLOW,
            FleetDriftInput(records=RECORDS, concurrency=3),
            id=f"drift-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=FleetDriftReport,
        )
    assert [t.slug for t in report.tenants] == SLUGS
    assert [t.slug for t in report.drifted] == ["tenant-03"]
    [failed] = report.failed
    assert failed.slug == "tenant-07" and "slurmctld does not answer" in failed.error
    assert fleet.attempts["tenant-07"] == 3, "a failing read is retried, then reported"
    assert fleet.most == 3
