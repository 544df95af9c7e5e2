"""Running TenantLifecycle with the real notifier against the lab's webhook sink on a real socket.

The worker runs the lifecycle, the offboarding it starts and the onboarding that starts it, with the
orchestration fakes (:mod:`tests.workflows.fakes`) for the tenant's layers and the real ``lifecycle.*``
activities, configured through the worker's environment (``TENANTFLOW_NOTIFY_WEBHOOK_URL`` pointing at
the sink, ``TENANTFLOW_TERM_REMINDER_DAYS``). :func:`drive_term` is the scenario the tests check and the
replay recorder records: a reminder, a renewal asked for and approved by someone else (a continue-as-new), the
reminders of the new end, expiry. :func:`change_record` of :func:`with_dave` is the record a ``tenantflow apply``
that added a user leaves, for the fakes' ``records.latest_tenant`` to read at expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from aiohttp import web
from temporalio.client import Client, WorkflowContinuedAsNewError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.records import lifecycle
from tenantflow.activities.records.gate_notify import notify_gate
from tenantflow.lab.notify_sink import build_app
from tenantflow.models.gates import ApprovePlan
from tenantflow.models.lifecycle import LifecycleInput, LifecycleResult, RenewTerm, TermStatus
from tenantflow.models.records import RecordStatus, RunStamp, TenantRecord
from tenantflow.models.run_ids import onboarding_id
from tenantflow.models.tenant import TenantContract, TenantUser
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.labfixture import exported
from tests.workflows.fakes import FakeWorld
from tests.workflows.term_parent import TermParent, start_lifecycle_child


@asynccontextmanager
async def notify_sink() -> AsyncIterator[str]:
    """The lab's webhook sink on a free loopback port; yields its base URL."""
    runner = web.AppRunner(build_app(), shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def received(sink: str) -> list[dict[str, Any]]:
    """What the sink received, read over HTTP."""
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{sink}/_lab/snapshot")
    answer.raise_for_status()
    found: list[dict[str, Any]] = answer.json()
    return found


def distinct(notices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``notices`` with one of each ``Idempotency-Key`` (the first): a notification is sent by a local activity,
    which runs at least once (again if its workflow task fails after the POST), so a receiver dedupes by that key."""
    seen: set[str] = set()
    kept = []
    for notice in notices:
        key = notice["idempotency_key"]
        if not key or key not in seen:
            seen.add(key)
            kept.append(notice)
    return kept


async def wait_received(sink: str, count: int, timeout_s: float = 30) -> list[dict[str, Any]]:
    """The sink's notices once it holds ``count`` of them (fails after ``timeout_s`` of real time)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(found := await received(sink)) < count:
        if loop.time() > deadline:
            raise AssertionError(f"the sink received {len(found)} notices, not {count}: {found}")
        await asyncio.sleep(0.05)
    return found


@asynccontextmanager
async def term_worker(
    env: WorkflowEnvironment, world: FakeWorld, sink: str, reminder_days: str = "30,7,1"
) -> AsyncIterator[TenantflowClient]:
    """A worker whose notifier posts to ``sink`` and whose lifecycles remind ``reminder_days`` before the end; its gate
    notifications go to the sink too when ``world`` has no fake notifier (``gate_notifier=False``)."""
    queue = f"term-{uuid.uuid4().hex[:8]}"
    values = {"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{sink}/hooks/term", "TENANTFLOW_TERM_REMINDER_DAYS": reminder_days}
    with exported(values), ThreadPoolExecutor(max_workers=4) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[TenantOnboarding, TenantOffboarding, TenantHold, TenantLifecycle, TermParent],
            activities=[*world.activities(), *lifecycle.ACTIVITIES, *([] if world.gate_notifier else [notify_gate])],
            activity_executor=pool,
        ):
            yield TenantflowClient(env.client, queue)


@dataclass
class TermRun:
    """What :func:`drive_term` saw: the term's first end, the runs and the notices in order."""

    start: datetime
    first_end: datetime
    renewed_end: datetime
    first_run_id: str
    notices: list[dict[str, Any]]
    requested: TermStatus
    """What ``renew`` answered: the renewal waiting for approval."""
    renewed: LifecycleInput
    """What the first run carried into the next once the renewal was approved and announced."""


async def start_term(
    env: WorkflowEnvironment,
    api: TenantflowClient,
    contract: TenantContract,
    days: int = 365,
    reminder_days: list[int] | None = [30],  # noqa: B006 - never mutated
) -> tuple[WorkflowHandle[Any, LifecycleResult], datetime]:
    """Start the lifecycle of ``contract`` with a term ending ``days`` from now, as the child of a test parent (a
    lifecycle without a parent fails at once): (its handle, the end)."""
    end = await env.get_current_time() + timedelta(days=days)
    params = LifecycleInput(contract=contract, term_end=end, reminder_days=reminder_days)
    return await start_lifecycle_child(env.client, api.task_queue, params, parent_queue=api.task_queue), end


async def wait_renewed(api: TenantflowClient, slug: str, timeout_s: float = 30) -> TermStatus:
    """The term once an approved renewal moved its end (the lifecycle announces it and continues as new)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not (term := await api.term(slug)) or not term.renewals:
        assert asyncio.get_running_loop().time() < deadline, f"no renewal recorded: {term}"
        await asyncio.sleep(0.1)
    return term


async def carried_over(client: Client, workflow_id: str, run_id: str) -> LifecycleInput:
    """The input the run ``run_id`` continued as new with, once it has (read from its history's last event)."""
    run = client.get_workflow_handle(workflow_id, run_id=run_id)
    with contextlib.suppress(WorkflowContinuedAsNewError):
        await run.result(follow_runs=False)
    last = (await run.fetch_history()).events[-1].workflow_execution_continued_as_new_event_attributes
    [carried] = await client.data_converter.decode(last.input.payloads, [LifecycleInput])
    assert isinstance(carried, LifecycleInput)
    return carried


async def drive_term(env: WorkflowEnvironment, api: TenantflowClient, sink: str, contract: TenantContract) -> TermRun:
    """A 40-day term: the 30-day reminder, ``renew`` by 20 days asked for by ``ops`` and approved by ``reviewer``
    (continue-as-new), the 30, 7 and 1-day reminders of the new end, then expiry (day 60), which starts the
    offboarding."""
    handle, first_end = await start_term(env, api, contract, days=40, reminder_days=None)
    start = first_end - timedelta(days=40)
    first_run_id = handle.first_execution_run_id or ""
    await env.sleep(timedelta(days=10, hours=1))
    await wait_received(sink, 1)
    requested: TermStatus = await handle.execute_update(
        "renew", RenewTerm(days=20, approver="ops", comment="renewed for Q3"), result_type=TermStatus
    )
    assert requested.pending_renewal is not None
    approval = ApprovePlan(plan_hash=requested.pending_renewal.plan_hash, approver="reviewer")
    await handle.execute_update("approve_plan", approval, result_type=str)
    await wait_received(sink, 2)
    renewed = await carried_over(env.client, handle.id, first_run_id)
    for day, count in ((30, 3), (53, 4), (59, 5), (60, 6)):
        await env.sleep(start + timedelta(days=day, minutes=1) - await env.get_current_time())
        await wait_received(sink, count)
    return TermRun(
        start=start,
        first_end=first_end,
        renewed_end=renewed.term_end,
        first_run_id=first_run_id,
        notices=await received(sink),
        requested=requested,
        renewed=renewed,
    )


DAVE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L dave@laptop"


def with_dave(contract: TenantContract) -> TenantContract:
    """``contract`` as a ``tenantflow apply`` left it after adding the user ``dave``."""
    dave = TenantUser(username="dave", name="Dave Added", email="dave@tenant-foo.example", ssh_keys=[DAVE_KEY])
    return contract.model_copy(update={"users": [*contract.users, dave]})


def change_record(contract: TenantContract) -> TenantRecord:
    """The record a completed change of ``contract`` wrote (its version after the onboarding's)."""
    stamp = RunStamp(
        workflow_id=onboarding_id(contract.slug),
        run_id="change-run",
        plan_hash="0123456789abcdef",
        approver="ops",
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return TenantRecord(contract=contract, run=stamp, status=RecordStatus.onboarded)
