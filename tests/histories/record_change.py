"""Record the ``TenantChange`` history for the replay tests from a real run against a whole lab.

Run ``python -m tests.histories.record_change`` (as root: the lab runs real slapd and Slurm) after a deliberate,
versioned change of the change workflow; commit the JSON it writes beside this file. It onboards the test tenant
of ``tests/starter/test_apply_lab.py`` with three users and 16 GPUs, then changes it to two users and 8 GPUs in one
approved run: every step of a change runs (drain, wait, the apply steps, release, user removal, validation).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from tenantflow.lab.supervisor import down, up
from tenantflow.models.onboarding import OnboardingResult
from tests.integration.runs import onboard
from tests.labfixture import lab_worker
from tests.starter.test_apply_lab import everyone, with_gpus, with_users
from tests.temporal_env import start_dev_server
from tests.workflows.harness import wait_for_stage

HERE = Path(__file__).resolve().parent


async def main() -> None:
    env = await start_dev_server()
    with tempfile.TemporaryDirectory() as tmp:
        lab = up(Path(tmp))
        try:
            async with lab_worker(env.client, lab) as api:
                three = everyone(lab)
                assert (await onboard(api, three)).status == "completed"
                changed = with_gpus(with_users(three, ["uma", "vic"], three), 8)
                handle = await api.start_change(changed, three)
                status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=120)
                assert status.plan_hash
                await api.approve(handle.id, status.plan_hash)
                result: OnboardingResult = await handle.result()
                assert result.status == "completed", result.message
                history = await handle.fetch_history()
            (HERE / "change-completed.json").write_text(history.to_json())
        finally:
            down(Path(tmp))
            await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
