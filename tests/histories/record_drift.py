"""Record the ``TenantDrift`` history for the replay tests from a real run against a whole lab.

Run ``python -m tests.histories.record_drift`` (as root: the lab runs real slapd and Slurm) after a deliberate,
versioned change of the drift workflow; commit the JSON it writes beside this file. It onboards one small tenant
(a clean check), stores the record of a second tenant that was never applied (every object missing) so two checks
run concurrently, and runs the fleet check as the schedule would.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle

from tenantflow.activities.common.recordstore import store
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.supervisor import down, up
from tenantflow.models.drift import DRIFT_WORKFLOW, FleetDriftInput, FleetDriftReport
from tenantflow.models.records import DEFAULT_NAMESPACE, RunStamp, TenantRecord
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.client import TenantflowClient
from tests.integration.runs import onboard
from tests.labfixture import lab_worker
from tests.starter.test_drift_lab import drift_tenant
from tests.temporal_env import start_dev_server

HERE = Path(__file__).resolve().parent


async def record_from_lab(
    name: str, run: Callable[[TenantflowClient, LabEndpoints], Awaitable[WorkflowHandle[Any, Any]]]
) -> None:
    """Start a dev server and a whole lab, ``run`` a workflow on a real worker, and write its history to ``name``."""
    env = await start_dev_server()
    with tempfile.TemporaryDirectory() as tmp:
        lab = up(Path(tmp))
        try:
            async with lab_worker(env.client, lab) as api:
                history = await (await run(api, lab)).fetch_history()
            (HERE / name).write_text(history.to_json())
        finally:
            down(Path(tmp))
            await env.shutdown()


async def fleet_check(api: TenantflowClient, lab: LabEndpoints) -> WorkflowHandle[Any, FleetDriftReport]:
    contract = drift_tenant(lab)
    assert (await onboard(api, contract)).status == "completed"
    never = contract.model_copy(update={"slug": "tenant-never", "display_name": "Never Applied"})
    stamp = RunStamp(
        workflow_id="tenant/tenant-never",
        run_id=uuid.uuid4().hex,
        plan_hash="recorded",
        approver="recorder",
        recorded_at=datetime.now(UTC),
    )
    await asyncio.to_thread(store, TenantRecord(contract=never, run=stamp), DEFAULT_NAMESPACE)
    records = KubeTarget(context="tenant-cluster")  # a cluster of the worker's registry
    handle = await api.client.start_workflow(
        DRIFT_WORKFLOW,
        FleetDriftInput(records=records, concurrency=2),
        id="drift-recorded",
        task_queue=api.task_queue,
        result_type=FleetDriftReport,
    )
    report = await handle.result()
    assert {t.slug: t.clean for t in report.tenants} == {contract.slug: True, "tenant-never": False}
    return handle


async def main() -> None:
    await record_from_lab("drift-lab.json", fleet_check)


if __name__ == "__main__":
    asyncio.run(main())
