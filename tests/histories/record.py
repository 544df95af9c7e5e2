"""Record onboarding histories (completed, rejected, rolled back) for the replay tests.

Run ``python -m tests.histories.record`` after a deliberate, versioned workflow
change; commit the JSON files it writes beside this file.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from temporalio.client import WorkflowFailureError

from tests.temporal_env import start_dev_server
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

HERE = Path(__file__).resolve().parent


async def record(name: str, world: FakeWorld, approve: bool) -> None:
    env = await start_dev_server()
    try:
        async with fake_worker(env, world) as api:
            handle = await api.start_onboarding(example_tenant(f"tenant-{name}"))
            status = await wait_for_stage(api, handle, "gate:approve_plan")
            if approve and status.plan_hash:
                await api.approve(handle.id, status.plan_hash)
            else:
                await api.reject(handle.id, "recorded rejection")
            with contextlib.suppress(WorkflowFailureError):
                await handle.result()
            history = await handle.fetch_history()
        (HERE / f"onboarding-{name}.json").write_text(history.to_json())
    finally:
        await env.shutdown()


async def main() -> None:
    await record("completed", FakeWorld(), approve=True)
    await record("rejected", FakeWorld(), approve=False)
    await record("rolledback", FakeWorld(fail_at="storage.quotas"), approve=True)


if __name__ == "__main__":
    asyncio.run(main())
