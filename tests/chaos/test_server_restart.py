"""The Temporal dev server stops and restarts on the same SQLite file mid-run; the run resumes and finishes."""

from __future__ import annotations

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.starter.devserver import DevServer
from tests.chaos.conftest import Baseline, Rig, approve_and_wait, tenant
from tests.chaos.kit import STATS


async def test_run_resumes_after_dev_server_restart(
    rig: Rig, chaos_server: DevServer, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    scenario = STATS.scenario("dev server stopped and restarted at the plan gate")
    handle = await rig.api.start_onboarding(tenant(chaos_lab))
    await rig.api.wait_for_plan(handle.id)
    chaos_server.stop()
    chaos_server.start(headless=True)
    STATS.server_restarts += 1
    end = await approve_and_wait(rig.api, handle.id)
    assert end[0] == baseline.end[0], end
    STATS.runs_completed += 1
    scenario.outcome = end[0]
