"""Record, once, the onboarding histories of the paths a run started today takes, for the replay tests.

A run started on today's code has every patch its path checks: ``onboarding-lean-history`` (standing for the
earlier ones), ``gate-notifications-local`` once its plan gate opens and ``replan-preflights`` once it is approved.
The corpus held such runs only for the re-plan's refusal, a smoke check re-run, and a gate that escalated; these
are the plain ones: completed, rolled back after a failed write, re-planned after something changed while the gate
waited, and refused by preflight (bad input: a contract asking for more GPUs than are free).
Run ``python -m tests.histories.record_today NAME...`` only for a history not yet committed, and never again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

from temporalio.client import WorkflowFailureError

from tests.histories.record_more import HERE
from tests.histories.record_safety import onboarding
from tests.temporal_env import start_dev_server
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def refused() -> None:
    """``onboarding-lean-refused``: preflight refuses the contract (64 GPUs wanted, 8 free); nothing is planned."""
    server = await start_dev_server()
    try:
        async with fake_worker(server, FakeWorld(preflight_error="64 GPUs wanted, 8 free")) as api:
            handle = await api.start_onboarding(example_tenant("tenant-lean-refused"))
            await wait_for_stage(api, handle, "preflight-failed")
            with contextlib.suppress(WorkflowFailureError):
                await handle.result()
            (HERE / "onboarding-lean-refused.json").write_text((await handle.fetch_history()).to_json())
    finally:
        await server.shutdown()


RECORDINGS: dict[str, Callable[[], Awaitable[None]]] = {
    "onboarding-lean-completed": lambda: onboarding("lean-completed", FakeWorld()),
    "onboarding-lean-rolledback": lambda: onboarding("lean-rolledback", FakeWorld(fail_at="storage.quotas")),
    "onboarding-lean-replanned": lambda: onboarding("lean-replanned", FakeWorld()),
    "onboarding-lean-refused": refused,
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
