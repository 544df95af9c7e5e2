"""A human deletes an object the approved plan counted on, after the approval and before the first write.

tenant-foo (onboarded by the session's baseline) is onboarded again: every object is planned unchanged. The
worker is stopped at the plan gate, the plan is approved (the approval reaches the run when a worker is back),
and the tenant's ResourceQuota is deleted by hand in that window. The re-plan at apply must see it: the approval
gate reopens naming the quota, nothing is applied and the quota is not silently recreated; only approving the
new plan recreates it, and the world is then the baseline's again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import APPLY
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, tenant
from tests.chaos.kit import STATS, comparable, compare_worlds, foreign_touched, world
from tests.chaos.racing import settle
from tests.integration.world import World, world_snapshot


def quotas(snapshot: World, namespace: str) -> list[str]:
    return [key for key in snapshot["kube-tenant-cluster"] if key.startswith(f"core/resourcequotas/{namespace}/")]


async def test_an_object_deleted_between_approval_and_apply_reopens_the_gate(
    rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    scenario = STATS.scenario("object deleted by hand between approval and apply")
    assert baseline.end[0] == "completed"
    contract = tenant(chaos_lab)
    quota = f"{contract.slug}-quota"
    start, snap = world(chaos_lab), world_snapshot(chaos_lab)
    assert quotas(snap, contract.namespace) == [f"core/resourcequotas/{contract.namespace}/{quota}"]
    handle = await rig.api.start_onboarding(contract)
    first = await rig.api.wait_for_plan(handle.id)
    assert first.plan_hash
    try:
        rig.worker.stop()
        approval = asyncio.create_task(reviewer(rig.api).approve(handle.id, first.plan_hash))
        subprocess.run(
            ["kubectl", "--context", "tenant-cluster", "-n", contract.namespace, "delete", "resourcequota", quota],
            env={**os.environ, "KUBECONFIG": str(chaos_lab.kubeconfig)},
            capture_output=True,
            timeout=60,
            check=True,
        )
        rig.worker.start()
        await approval
        state, gate = await settle(rig.api, handle.id, first.plan_hash)
        assert state == "reopened", (state, gate)
        assert (
            "CHANGED since the last approval" in gate
            and f"ResourceQuota {contract.namespace}/{quota}: unchanged -> create" in gate
        ), gate
        again = await rig.api.status(handle.id)
        assert not {s.name for s in again.steps} & {s.name for s in APPLY}, "applied on a changed plan"
        assert not quotas(world_snapshot(chaos_lab), contract.namespace), "the quota was recreated without approval"
        await reviewer(rig.api).approve(handle.id, again.plan_hash or "")
        end = await settle(rig.api, handle.id, again.plan_hash or "")
        assert end[0] == "completed", end
    finally:
        if await rig.api.running(handle.id):
            await handle.terminate("the scenario failed")
    touched = foreign_touched(snap, world_snapshot(chaos_lab), (contract.slug, *contract.usernames), scenario)
    compare_worlds(start, world(chaos_lab), comparable, scenario=scenario)
    assert not touched, "\n".join(touched)
    STATS.runs_completed += 1
    scenario.outcome = "reopened, then applied"
