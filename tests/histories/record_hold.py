"""Record the histories of the tenant's hold (``workflows/tenant_hold.py``) for the replay tests, once.

``onboarding-hold-completed``: an onboarding that held its tenant (a ``TenantHold`` child) and completed.
``offboarding-hold-refused``: an offboarding started with a plain Temporal client while the tenant's onboarding
held it, which ended before any activity. Run ``python -m tests.histories.record_hold NAME...`` only for a new
path; commit the JSON files it writes beside this file and never record them again.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.run_ids import offboarding_id
from tests.histories.record_more import save
from tests.histories.record_safety import onboarding
from tests.temporal_env import start_dev_server
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def refused() -> None:
    """Record ``offboarding-hold-refused``: the onboarding holds the tenant at its plan gate; the offboarding ends."""
    server = await start_dev_server()
    contract = example_tenant("tenant-held")
    try:
        async with fake_worker(server, FakeWorld(present=True)) as api:
            held = await api.start_onboarding(contract)
            await wait_for_stage(api, held, "gate:approve_plan")
            handle = await server.client.start_workflow(
                "TenantOffboarding",
                OffboardingInput(contract=contract),
                id=offboarding_id(contract.slug),
                task_queue=api.task_queue,
            )
            await wait_for_stage(api, handle, "refused")
            await save(handle, "offboarding-hold-refused")
            await held.terminate("recorded")
    finally:
        await server.shutdown()


RECORDINGS: dict[str, Callable[[], Awaitable[None]]] = {
    "onboarding-hold-completed": lambda: onboarding("hold-completed", FakeWorld()),
    "offboarding-hold-refused": refused,
}
"""Each history this module records, by file name (without .json)."""


async def main(names: list[str]) -> None:
    unknown = set(names) - set(RECORDINGS)
    if not names or unknown:
        raise SystemExit(f"name the histories to record (never again once committed): {', '.join(RECORDINGS)}")
    for name in names:
        await RECORDINGS[name]()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
