"""``tenantflow status --watch`` in a real terminal (tmux) shows the open gate and the exact approve command."""

from __future__ import annotations

import asyncio
import shlex
import uuid

from tenantflow.starter.client import TenantflowClient
from tests.cli.conftest import CLI, cli_env, unique_slug
from tests.workflow.contract import example_tenant
from tests.workflow.harness import wait_for_stage


async def tmux(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec("tmux", *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def screen_until(session: str, wanted: list[str], timeout_s: float = 60) -> str:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        screen = await tmux("capture-pane", "-p", "-t", session)
        if all(text in screen for text in wanted):
            return screen
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never saw {wanted} on screen:\n{screen}")
        await asyncio.sleep(0.3)


async def test_status_watch_shows_gate_and_approve_command(fake_api: TenantflowClient) -> None:
    handle = await fake_api.start_onboarding(example_tenant(unique_slug()))
    waiting = await wait_for_stage(fake_api, handle, "gate:approve_plan")
    assert waiting.plan_hash
    session = f"tf-{uuid.uuid4().hex[:8]}"
    env = cli_env(fake_api)
    exports = " ".join(f"{key}={shlex.quote(env[key])}" for key in ("TEMPORAL_ADDRESS", "TENANTFLOW_TASK_QUEUE"))
    await tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50")
    try:
        await tmux("send-keys", "-t", session, f"env {exports} {CLI} status {handle.id} --watch; echo EXIT=$?",
                   "Enter")
        await screen_until(session, ["waiting on gate approve_plan",
                                     f"tenantflow approve {handle.id} --plan-hash {waiting.plan_hash}",
                                     "stage=gate:approve_plan"])
        await fake_api.approve(handle.id, waiting.plan_hash)
        await handle.result()
        final = await screen_until(session, ["stage=completed", "EXIT=0"], timeout_s=240)
        assert "waiting on gate" not in final
    finally:
        await tmux("kill-session", "-t", session)
