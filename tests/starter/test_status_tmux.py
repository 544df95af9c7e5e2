"""``tenantflow status --watch`` in a real terminal (tmux) shows the open gate and the exact approve command."""

from __future__ import annotations

from tenantflow.starter.client import TenantflowClient
from tests.starter.conftest import unique_slug
from tests.starter.tmux import run_cli, screen_until, terminal
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage


async def test_status_watch_shows_gate_and_approve_command(fake_api: TenantflowClient) -> None:
    handle = await fake_api.start_onboarding(example_tenant(unique_slug()))
    waiting = await wait_for_stage(fake_api, handle, "gate:approve_plan")
    assert waiting.plan_hash
    async with terminal(200, rows=60) as session:  # the finished run's steps table is 50 rows high
        await run_cli(session, fake_api, f"status {handle.id} --watch")
        await screen_until(
            session,
            [
                "waiting on gate approve_plan",
                f"tenantflow approve {handle.id} --plan-hash {waiting.plan_hash}",
                "stage=gate:approve_plan",
            ],
        )
        await fake_api.approve(handle.id, waiting.plan_hash)
        await handle.result()
        final = await screen_until(session, ["stage=completed", "EXIT=0"], timeout_s=240)
        assert "waiting on gate" not in final
