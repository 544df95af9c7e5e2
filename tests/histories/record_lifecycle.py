"""Record TenantLifecycle histories (and an onboarding that starts one) for the replay tests, on the time-skipping
server (a term lasts days).

Run ``python -m tests.histories.record_lifecycle`` after a deliberate, versioned workflow change; commit the JSON
files it writes beside this file (their workflow ids go in ``strict_replay.TIME_SKIPPING_IDS``):
``lifecycle-renewed`` (a reminder, ``renew``, the continue-as-new), ``lifecycle-expired`` (the run after it: the
reminders of the new end, expiry, the offboarding started) and ``onboarding-lifecycle`` (a completed onboarding
that starts the tenant's lifecycle).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tenantflow.models.lifecycle import lifecycle_id
from tests.temporal_env import start_time_skipping
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding
from tests.workflows.lifecycle_harness import drive_term, notify_sink, term_worker

HERE = Path(__file__).resolve().parent


async def main() -> None:
    env = await start_time_skipping()
    try:
        async with notify_sink() as sink, term_worker(env, FakeWorld(present=True), sink) as api:
            seen = await drive_term(env, api, sink, example_tenant("tenant-term"))
            workflow_id = lifecycle_id("tenant-term")
            first = await env.client.get_workflow_handle(workflow_id, run_id=seen.first_run_id).fetch_history()
            (HERE / "lifecycle-renewed.json").write_text(first.to_json())
            last = env.client.get_workflow_handle(workflow_id)
            await last.result()
            (HERE / "lifecycle-expired.json").write_text((await last.fetch_history()).to_json())

            handle = await approved_onboarding(api, example_tenant("tenant-onboard-term"))
            await handle.result()
            (HERE / "onboarding-lifecycle.json").write_text((await handle.fetch_history()).to_json())
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
