"""Record TenantLifecycle histories (and the onboarding and offboarding that start and end one) for the replay
tests, on the time-skipping server (a term lasts days).

Run ``python -m tests.histories.record_lifecycle NAME...`` after a deliberate, versioned workflow change (histories
already committed are never recorded again); commit the JSON files it writes beside this file (their workflow ids
go in ``strict_replay.TIME_SKIPPING_IDS``): ``lifecycle`` writes ``lifecycle-renewed`` (a reminder, ``renew``,
the continue-as-new) and ``lifecycle-expired`` (the run after it: the reminders of the new end, expiry, the
offboarding started), both recorded before ``renew`` waited for an approval; ``lifecycle-renew-gated`` the first run
of the same scenario since (a reminder, ``renew`` waiting at ``approve_plan``, its approval, the continue-as-new);
``lifecycle-renewal-notified`` that first run since ``renewal-gate-notifications`` (the waiting renewal notified);
``onboarding-lifecycle`` a completed onboarding that starts the tenant's lifecycle; ``offboarding-ends-term`` a
completed offboarding that ends the tenant's running lifecycle; ``lifecycle-expired-latest-record`` a term's
expiry since ``expiry-offboards-latest-record``: a reminder, the wait for a running onboarding or change (none
runs), the latest record read (it holds a user an apply added) and the offboarding of its contract started.
``lifecycle-expired-notifying`` that expiry as a term started today runs it (``renewal-gate-notifications`` too);
``lifecycle-parentless`` a lifecycle started without its onboarding as parent (bad input), refused at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.lifecycle import LifecycleInput
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.starter.client import TenantflowClient
from tests.temporal_env import start_time_skipping
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding, wait_for_stage
from tests.workflows.lifecycle_harness import (
    change_record,
    drive_term,
    notify_sink,
    start_term,
    term_worker,
    with_dave,
)

HERE = Path(__file__).resolve().parent
Recorder = Callable[[WorkflowEnvironment, TenantflowClient, str], Awaitable[None]]


async def save(handle: WorkflowHandle[object, object], name: str) -> None:
    (HERE / f"{name}.json").write_text((await handle.fetch_history()).to_json())


async def lifecycle(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    seen = await drive_term(env, api, sink, example_tenant("tenant-term"))
    await save(
        env.client.get_workflow_handle(lifecycle_id("tenant-term"), run_id=seen.first_run_id), "lifecycle-renewed"
    )
    last = env.client.get_workflow_handle(lifecycle_id("tenant-term"))
    await last.result()
    await save(last, "lifecycle-expired")


async def lifecycle_renew_gated(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    seen = await drive_term(env, api, sink, example_tenant("tenant-term-gated"))
    await save(
        env.client.get_workflow_handle(lifecycle_id("tenant-term-gated"), run_id=seen.first_run_id),
        "lifecycle-renew-gated",
    )


async def lifecycle_renewal_notified(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    seen = await drive_term(env, api, sink, example_tenant("tenant-term-notified"))
    await save(
        env.client.get_workflow_handle(lifecycle_id("tenant-term-notified"), run_id=seen.first_run_id),
        "lifecycle-renewal-notified",
    )


async def onboarding_lifecycle(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    handle = await approved_onboarding(api, example_tenant("tenant-onboard-term"))
    await handle.result()
    await save(handle, "onboarding-lifecycle")


async def offboarding_ends_term(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    contract = example_tenant("tenant-gone")
    term, _ = await start_term(env, api, contract)
    handle = await api.start_offboarding(contract)
    status = await wait_for_stage(api, handle, "gate:approve_plan")
    await api.approve(handle.id, status.plan_hash or "")
    await wait_for_stage(api, term, "term:offboarded")
    await handle.result()
    await save(handle, "offboarding-ends-term")


LATEST_RECORD_TENANT = "tenant-term-latest"
NOTIFYING_TENANT = "tenant-term-today"
WORLDS = {
    "lifecycle-expired-latest-record": [change_record(with_dave(example_tenant(LATEST_RECORD_TENANT)))],
    "lifecycle-expired-notifying": [change_record(with_dave(example_tenant(NOTIFYING_TENANT)))],
}
"""The tenant records a recorder's fakes hold before it runs (``records.latest_tenant`` reads them)."""


async def lifecycle_expired_latest_record(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    term, _ = await start_term(env, api, example_tenant(LATEST_RECORD_TENANT), days=2, reminder_days=[1])
    await env.sleep(timedelta(days=2, minutes=1))
    await term.result()
    await save(term, "lifecycle-expired-latest-record")


async def lifecycle_expired_notifying(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    """The same expiry as a term started today runs it: with ``renewal-gate-notifications`` too."""
    term, _ = await start_term(env, api, example_tenant(NOTIFYING_TENANT), days=2, reminder_days=[1])
    await env.sleep(timedelta(days=2, minutes=1))
    await term.result()
    await save(term, "lifecycle-expired-notifying")


async def lifecycle_parentless(env: WorkflowEnvironment, api: TenantflowClient, sink: str) -> None:
    """A lifecycle started directly, without the onboarding as its parent (bad input): refused at once."""
    end = await env.get_current_time() + timedelta(days=30)
    term = await env.client.start_workflow(
        "TenantLifecycle",
        LifecycleInput(contract=example_tenant("tenant-term-orphan"), term_end=end),
        id=lifecycle_id("tenant-term-orphan"),
        task_queue=api.task_queue,
    )
    with contextlib.suppress(WorkflowFailureError):
        await term.result()
    await save(term, "lifecycle-parentless")


RECORDERS: dict[str, Recorder] = {
    "lifecycle": lifecycle,
    "lifecycle-renew-gated": lifecycle_renew_gated,
    "lifecycle-renewal-notified": lifecycle_renewal_notified,
    "onboarding-lifecycle": onboarding_lifecycle,
    "offboarding-ends-term": offboarding_ends_term,
    "lifecycle-expired-latest-record": lifecycle_expired_latest_record,
    "lifecycle-expired-notifying": lifecycle_expired_notifying,
    "lifecycle-parentless": lifecycle_parentless,
}


async def main(names: list[str]) -> None:
    unknown = set(names) - set(RECORDERS)
    if unknown or not names:
        raise SystemExit(f"name one or more of {', '.join(RECORDERS)} (not {', '.join(sorted(unknown))})")
    for name in names:
        env = await start_time_skipping()
        try:
            world = FakeWorld(present=True, records=WORLDS.get(name, []))
            async with notify_sink() as sink, term_worker(env, world, sink) as api:
                await RECORDERS[name](env, api, sink)
        finally:
            await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
