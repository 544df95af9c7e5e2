"""Onboarding a tenant while the same tenant is being offboarded.

A small tenant is onboarded; then its offboarding (with purge) and a new onboarding of the same slug are started
together, and the offboarding's purge confirmation and the onboarding's approval are given at the same moment.
Whatever tenantflow does with the pair (refuse one, or let one finish before the other writes), the tenant ends
either whole or gone in every layer, never half, and nothing foreign is touched; it is then offboarded with purge
and the world is the one before (deactivated user records aside).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.starter.client import RunAlreadyActive
from tests.chaos.conftest import Baseline, Rig, small_tenant
from tests.chaos.kit import STATS, comparable, world
from tests.chaos.racing import Before, free_nodes, settle, tally
from tests.integration.runs import offboard, onboard
from tests.integration.world import describe_diff, world_snapshot
from tests.workflows.harness import wait_for_stage


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
        refused = [str(s) for s in started if isinstance(s, RunAlreadyActive)]
        assert all(not isinstance(s, BaseException) or isinstance(s, RunAlreadyActive) for s in started), started
        handles: list[WorkflowHandle[Any, Any]] = [s for s in started if not isinstance(s, BaseException)]
        plans = await asyncio.gather(*(api.wait_for_plan(h.id) for h in handles))
        off = next((h for h in handles if h.id.startswith("offboard/")), None)
        if off is not None:
            await api.approve(off.id, plans[handles.index(off)].plan_hash or "")
            await wait_for_stage(api, off, "gate:confirm_purge")
        await asyncio.gather(
            *(
                api.answer_gate(h.id, "confirm_purge") if h is off else api.approve(h.id, p.plan_hash or "")
                for h, p in zip(handles, plans, strict=True)
            )
        )
        ends = await asyncio.gather(
            *(settle(api, h.id, p.plan_hash or "") for h, p in zip(handles, plans, strict=True))
        )
        for handle, end in zip(handles, ends, strict=True):
            if end[0] == "reopened":
                await api.reject(handle.id, "the other run changed the tenant")
        now = world(chaos_lab)
        gone = comparable(now) == comparable(before.view)
        assert gone or comparable(now) == comparable(whole), "half a tenant:\n" + describe_diff(
            comparable(whole), comparable(now)
        )
        ended = [(h.id, e[0], e[1][:60]) for h, e in zip(handles, ends, strict=True)]
        STATS.notes.append(
            f"onboarding during offboarding: refused {refused}; {ended}; tenant {'gone' if gone else 'whole'}"
        )
        STATS.runs_completed += 1
    finally:
        if contract.slug in world_snapshot(chaos_lab)["authentik"]["groups"]:
            assert (await offboard(api, contract, purge=True)).status == "completed"
    tally(scenario, chaos_lab, before, (contract.slug, *contract.usernames, contract.team_account or ""))
    scenario.outcome = f"tenant {'gone' if gone else 'whole'}, refused {len(refused)}"
