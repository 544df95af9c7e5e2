"""At the term's end the lifecycle offboards the contract of the tenant's latest record, not the one it started with
(issue 26, item 5): a user a ``tenantflow apply`` added is in the offboarding; an unreadable record falls back to
the contract the lifecycle holds and the teardown plan says so; an onboarding or change of the tenant still
running at expiry is waited for (stage ``term:settling``) before the offboarding starts."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.run_ids import offboarding_id
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage
from tests.workflows.lifecycle_harness import (
    change_record,
    notify_sink,
    start_term,
    term_worker,
    wait_received,
    with_dave,
)


async def offboarding_input(client: Client, workflow_id: str) -> OffboardingInput:
    """The input the offboarding ``workflow_id`` was started with, read from its history's first event."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    [params] = await client.data_converter.decode(started.input.payloads, [OffboardingInput])
    assert isinstance(params, OffboardingInput)
    return params


async def expired(sink: str) -> str:
    """The message of the ``term.expired`` notice (sent once the offboarding started), read at the sink: awaiting the
    lifecycle's result instead would let the time-skipping server skip past the offboarding's gate."""
    [notice] = await wait_received(sink, 1)
    assert notice["body"]["event"] == "term.expired", notice
    message: str = notice["body"]["message"]
    return message


async def test_expiry_offboards_the_user_an_apply_added(ts_env: WorkflowEnvironment) -> None:
    first = example_tenant(f"tenant-l{uuid.uuid4().hex[:6]}")
    world = FakeWorld(present=True, records=[change_record(with_dave(first))])
    async with notify_sink() as sink, term_worker(ts_env, world, sink) as api:
        await start_term(ts_env, api, first, days=1, reminder_days=[])
        await ts_env.sleep(timedelta(days=1, minutes=1))
        await expired(sink)
        params = await offboarding_input(api.client, offboarding_id(first.slug))
        assert [user.username for user in params.contract.users] == ["alice", "bob", "carol", "dave"]
        assert params.notes == []
        offboarding = api.client.get_workflow_handle(offboarding_id(first.slug))
        details = await (await offboarding.describe()).static_details() or ""
        assert f"contract: the tenant's latest record, written by `tenant/{first.slug}`" in details
        await offboarding.terminate("test done")


async def test_an_unreadable_record_falls_back_to_the_held_contract_and_says_so(ts_env: WorkflowEnvironment) -> None:
    first = example_tenant(f"tenant-u{uuid.uuid4().hex[:6]}")
    world = FakeWorld(present=True, records_unreadable="secrets is forbidden")
    async with notify_sink() as sink, term_worker(ts_env, world, sink) as api:
        await start_term(ts_env, api, first, days=1, reminder_days=[])
        await ts_env.sleep(timedelta(days=1, minutes=1))
        message = await expired(sink)
        params = await offboarding_input(api.client, offboarding_id(first.slug))
        assert [user.username for user in params.contract.users] == ["alice", "bob", "carol"]
        offboarding = api.client.get_workflow_handle(offboarding_id(first.slug))
        status = await wait_for_stage(api, offboarding, "gate:approve_plan")
        assert status.plan is not None
        said = "the tenant's latest record could not be read (Forbidden: secrets is forbidden)"
        assert status.plan.notes[0].startswith(said), status.plan.notes
        assert said in message
        await offboarding.terminate("test done")


async def test_expiry_waits_for_the_tenants_running_run(ts_env: WorkflowEnvironment) -> None:
    first = example_tenant(f"tenant-w{uuid.uuid4().hex[:6]}")
    world = FakeWorld(present=True)
    async with notify_sink() as sink, term_worker(ts_env, world, sink) as api:
        lifecycle, end = await start_term(ts_env, api, first, days=1, reminder_days=[])
        onboarding = await api.start_onboarding(first)
        await wait_for_stage(api, onboarding, "gate:approve_plan")
        # to just past the end: time stops skipping while the lifecycle's wait activity runs
        await ts_env.sleep(end - await ts_env.get_current_time() + timedelta(seconds=1))
        settling = await wait_for_stage(api, lifecycle, "term:settling")
        assert f"while tenant/{first.slug} runs" in settling.message
        assert "records.latest_tenant" not in world.calls, "the record is read once the run has closed"
        await api.reject(onboarding.id, "not now")
        await expired(sink)
        assert "records.latest_tenant" in world.calls
        await api.client.get_workflow_handle(offboarding_id(first.slug)).terminate("test done")
