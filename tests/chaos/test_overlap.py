"""Onboarding a tenant while the same tenant is being offboarded.

A small tenant is onboarded; then its offboarding (with purge) and a new onboarding of the same slug are started
at the same moment. Their workflow ids differ, so Temporal's id conflict policy cannot keep them apart: exactly one
holds the tenant (``workflows/tenant_hold.py``); the other is refused before any write, by the client when it saw
the first running (:mod:`starter.exclusive`), else by the hold, its run failing, saying which run holds the
tenant. The holder completes, so the tenant ends whole or gone in every layer, never half, and nothing foreign is
touched. It is then offboarded with purge and the world
is the one before (deactivated user records aside).
"""

from __future__ import annotations

import asyncio

from tenantflow.lab.endpoints import LabEndpoints
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, small_tenant
from tests.chaos.kit import STATS, comparable, world
from tests.chaos.racing import Before, free_nodes, settle, tally
from tests.integration.runs import offboard, onboard
from tests.integration.world import describe_diff, world_snapshot
from tests.workflows.harness import one_holds, wait_for_stage


async def test_onboarding_while_the_same_tenant_is_offboarded(
    rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    scenario = STATS.scenario("onboarding while the same tenant is offboarded")
    assert baseline.end[0] == "completed"
    api = rig.api
    contract = small_tenant(chaos_lab, "tenant-ov", ("overlap-1", "overlap-2"), free_nodes(chaos_lab)[:2])
    before = Before.take(chaos_lab)
    assert (await onboard(api, contract)).status == "completed"
    whole = world(chaos_lab)
    try:
        started = await asyncio.gather(
            api.start_offboarding(contract, purge_data=True), api.start_onboarding(contract), return_exceptions=True
        )
        handle, refused = await one_holds(api, list(started))
        assert len(refused) == 1 and "of the same tenant is in progress" in refused[0], refused
        assert "not started" in refused[0] or "ended before any write" in refused[0], refused
        gone = handle.id.startswith("offboard/")
        plan = await api.wait_for_plan(handle.id)
        await reviewer(api).approve(handle.id, plan.plan_hash or "")
        if gone:
            await wait_for_stage(api, handle, "gate:confirm_purge")
            await reviewer(api).answer_gate(handle.id, "confirm_purge")
        end = await settle(api, handle.id, plan.plan_hash or "")
        assert end[0] == "completed", end
        expected = before.view if gone else whole
        assert comparable(world(chaos_lab)) == comparable(expected), "half a tenant:\n" + describe_diff(
            comparable(expected), comparable(world(chaos_lab))
        )
        STATS.notes.append(f"onboarding during offboarding: {handle.id} ran; {refused[0]}"[:200])
        STATS.runs_completed += 1
        STATS.runs_failed_as_expected += 1
    finally:
        if contract.slug in world_snapshot(chaos_lab)["authentik"]["groups"]:
            assert (await offboard(api, contract, purge=True)).status == "completed"
    tally(scenario, chaos_lab, before, (contract.slug, *contract.usernames, contract.team_account or ""))
    scenario.outcome = f"one refused; {'gone' if gone else 'whole'}"
