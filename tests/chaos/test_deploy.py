"""A second worker version deployed while a run waits at its plan gate.

Worker v1 (a Worker Deployment version, runs pinned) starts an onboarding that stops at the plan gate. v2 is
started and made current, v1 is stopped and the plan approved: the pinned run stays on v1 (no task of it runs
on v2, while v2 serves a new run's plan), and when v1's worker is back the run finishes there. The tenant's
lifecycle, which the run starts on v1 as it completes, auto-upgrades: the offboarding's ``tenant_offboarded``
ends it on v2. Nothing is lost or duplicated, and after an offboarding with purge the world is the one before.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import DevServer
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, small_tenant
from tests.chaos.kit import STATS, WorkerProcess, settings
from tests.chaos.racing import Before, free_nodes, settle, tally
from tests.integration.runs import offboard
from tests.worker.test_versioning import set_current, task_versions

PINNED = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
AUTO_UPGRADE = VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE


async def test_a_run_pinned_to_v1_waits_for_v1_while_v2_takes_new_runs(
    chaos_server: DevServer, chaos_lab: LabEndpoints, baseline: Baseline, tmp_path: Path
) -> None:
    scenario = STATS.scenario("second worker version deployed mid-run")
    assert baseline.end[0] == "completed"
    queue, deployment = f"chaos-v-{uuid.uuid4().hex[:8]}", f"tenantflow-{uuid.uuid4().hex[:6]}"
    v1, v2 = (
        WorkerProcess(
            chaos_server.address,
            queue,
            chaos_lab,
            tmp_path / f"{build}.log",
            TENANTFLOW_DEPLOYMENT_NAME=deployment,
            TENANTFLOW_BUILD_ID=build,
        )
        for build in ("v1", "v2")
    )
    nodes = free_nodes(chaos_lab)[:2]
    contract = small_tenant(chaos_lab, "tenant-dv", ("deploy-1", "deploy-2"), nodes)
    before = Before.take(chaos_lab)
    v1.start()
    api = await TenantflowClient.connect(settings(chaos_server.address, queue))
    try:
        await set_current(api.client, deployment, "v1", queue)
        old = await api.start_onboarding(contract)
        try:
            await pinned_through_a_deploy(api, old, (v1, v2), deployment, contract_probe(chaos_lab, nodes))
        finally:
            if await api.running(old.id):
                await old.terminate("the scenario failed")
            if v2.proc is None:
                v2.start()
                await set_current(api.client, deployment, "v2", queue)
            gone = await offboard(api, contract, purge=True)
            assert gone.status == "completed", gone.message
        lifecycle = api.client.get_workflow_handle(lifecycle_id(contract.slug))
        await lifecycle.result()
        assert await task_versions(lifecycle) == {("v1", AUTO_UPGRADE), ("v2", AUTO_UPGRADE)}
    finally:
        v1.stop()
        v2.stop()
    tally(scenario, chaos_lab, before, (contract.slug, *contract.usernames, contract.team_account or ""))
    scenario.outcome = "v1 pinned, term on v2"


def contract_probe(lab: LabEndpoints, nodes: list[str]) -> TenantContract:
    """A new run for v2 to serve: planned (read-only) and rejected."""
    return small_tenant(lab, "tenant-dp", ("probe-1", "probe-2"), nodes)


async def pinned_through_a_deploy(
    api: TenantflowClient,
    old: WorkflowHandle[Any, Any],
    workers: tuple[WorkerProcess, WorkerProcess],
    deployment: str,
    probe_contract: TenantContract,
) -> None:
    """At the plan gate: v2 made current, v1 stopped, the plan approved; the run waits for v1 and ends there."""
    v1, v2 = workers
    plan = await api.wait_for_plan(old.id)
    v2.start()
    await set_current(api.client, deployment, "v2", api.task_queue)
    v1.stop()
    approval = asyncio.create_task(reviewer(api).approve(old.id, plan.plan_hash or ""))
    probe = await api.start_onboarding(probe_contract)
    assert (await api.wait_for_plan(probe.id)).plan_hash
    await api.reject(probe.id, "a probe of v2")
    assert (await settle(api, probe.id, ""))[0] == "rejected"
    assert not approval.done(), "the approval reached the pinned run with no v1 worker"
    assert await task_versions(old) == {("v1", PINNED)}, "a task of the pinned run ran on v2"
    v1.start()
    await approval
    end = await settle(api, old.id, plan.plan_hash or "")
    assert end[0] == "completed", end
    assert await task_versions(old) == {("v1", PINNED)}
    assert await task_versions(probe) == {("v2", PINNED)}
    STATS.runs_completed += 1
