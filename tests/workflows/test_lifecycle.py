"""TenantLifecycle on the time-skipping server: reminders reach the lab's webhook sink over HTTP at the configured
offsets, ``renew`` waits for an approval and then moves the end (and is refused with the reason for a bad number of
days), expiry starts the offboarding, which removes nothing until its plan is approved; a completed onboarding
starts the lifecycle. (``renew`` under the four-eyes rule: tests/security/test_renew_gate.py.)"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import STARTED_BY_MEMO
from tenantflow.models.lifecycle import LifecycleResult, RenewTerm, TermStatus
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.run_ids import lifecycle_id, offboarding_id
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding, wait_for_stage
from tests.workflows.lifecycle_harness import drive_term, notify_sink, received, start_term, term_worker


def undos(world: FakeWorld) -> list[str]:
    return [call for call in world.calls if ".undo" in call]


async def test_reminders_renew_and_expiry_open_the_offboarding_gate(ts_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    contract = example_tenant(f"tenant-t{uuid.uuid4().hex[:6]}")
    async with notify_sink() as sink, term_worker(ts_env, world, sink) as api:
        seen = await drive_term(ts_env, api, sink, contract)
        new_end = seen.first_end + timedelta(days=20)
        pending = seen.requested.pending_renewal
        assert seen.requested.term_end == seen.first_end and pending is not None, "renew waits for an approval"
        assert (pending.days, pending.requested_by, pending.comment) == (20, "ops", "renewed for Q3")
        assert seen.renewed_end == new_end and seen.renewed.pending_renewal is None
        [renewal] = seen.renewed.renewals
        assert (renewal.days, renewal.requested_by, renewal.approver) == (20, "ops", "reviewer")

        bodies = [n["body"] for n in seen.notices]
        assert {n["path"] for n in seen.notices} == {"/hooks/term"}
        assert [(b["event"], b["days_left"], datetime.fromisoformat(b["term_end"])) for b in bodies] == [
            ("term.reminder", 30, seen.first_end),
            ("term.renewed", 50, new_end),
            ("term.reminder", 30, new_end),
            ("term.reminder", 7, new_end),
            ("term.reminder", 1, new_end),
            ("term.expired", 0, new_end),
        ]
        assert all(b["tenant"] == contract.slug for b in bodies)
        keys = [n["idempotency_key"] for n in seen.notices]
        assert all(keys) and len(set(keys)) == len(keys)

        lifecycle = api.client.get_workflow_handle(lifecycle_id(contract.slug), result_type=LifecycleResult)
        result: LifecycleResult = await lifecycle.result()
        assert result.status == "expired" and result.term_end == new_end
        assert result.offboarding == offboarding_id(contract.slug)
        history = await api.client.get_workflow_handle(
            lifecycle_id(contract.slug), run_id=seen.first_run_id
        ).fetch_history()
        assert history.events[-1].HasField("workflow_execution_continued_as_new_event_attributes")

        offboarding = api.client.get_workflow_handle(result.offboarding, result_type=OffboardingResult)
        status = await wait_for_stage(api, offboarding, "gate:approve_plan")
        assert status.plan_hash and not undos(world), "nothing is removed before the teardown plan is approved"
        started_by = await (await offboarding.describe()).memo_value(STARTED_BY_MEMO, type_hint=str)
        assert started_by == lifecycle_id(contract.slug), "the four-eyes rule lets any person approve it"
        await api.approve(result.offboarding, status.plan_hash)
        done: OffboardingResult = await offboarding.result()
        assert done.status == "completed" and "identity.undo:users" in undos(world)


@pytest.mark.parametrize("days", [0, -5, 3651])
async def test_renew_refuses_a_bad_number_of_days_with_the_reason(ts_env: WorkflowEnvironment, days: int) -> None:
    contract = example_tenant(f"tenant-r{uuid.uuid4().hex[:6]}")
    async with notify_sink() as sink, term_worker(ts_env, FakeWorld(), sink) as api:
        handle, end = await start_term(ts_env, api, contract)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("renew", RenewTerm(days=days))
        assert f"days={days}: a renewal adds 1 to 3650 days" in str(refused.value.cause)
        term: TermStatus = await handle.query("term", result_type=TermStatus)
        assert term.term_end == end and not term.renewals
        await handle.terminate("test done")


async def test_a_completed_onboarding_starts_the_term_once(ts_env: WorkflowEnvironment) -> None:
    contract = example_tenant(f"tenant-o{uuid.uuid4().hex[:6]}")
    async with notify_sink() as sink, term_worker(ts_env, FakeWorld(), sink, reminder_days="3,14") as api:
        for expected in ("keeps the term", "already keeps the term"):
            result = await (await approved_onboarding(api, contract)).result()
            assert result.status == "completed"
            [said] = [f.message for f in result.findings if f.check == "term"]
            assert said.startswith(f"{lifecycle_id(contract.slug)} {expected}")
        lifecycle = api.client.get_workflow_handle(lifecycle_id(contract.slug))
        description = await lifecycle.describe()
        started = description.start_time
        assert (await description.static_summary() or "").startswith(f"Term of {contract.slug}: 365 days, ends ")
        assert f"- started by: `tenant/{contract.slug}`" in (await description.static_details() or "")
        term: TermStatus = await lifecycle.query("term", result_type=TermStatus)
        assert term.stage == "term:running" and term.reminder_days == [14, 3]
        assert abs(term.term_end - (started + timedelta(days=contract.capacity.term_days))) < timedelta(minutes=1)
        await lifecycle.terminate("test done")


async def test_an_offboarding_completed_before_the_end_ends_the_term(ts_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    contract = example_tenant(f"tenant-b{uuid.uuid4().hex[:6]}")
    async with notify_sink() as sink, term_worker(ts_env, world, sink) as api:
        lifecycle, end = await start_term(ts_env, api, contract)
        offboarding = await api.start_offboarding(contract)
        status = await wait_for_stage(api, offboarding, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(offboarding.id, status.plan_hash)
        await wait_for_stage(api, lifecycle, "term:offboarded")
        result: LifecycleResult = await lifecycle.result()
        assert result.status == "offboarded" and result.offboarding == offboarding.id
        assert (await offboarding.result()).status == "completed"
        assert not await received(sink), "an offboarded tenant gets no reminders"
    ended = await api.term(contract.slug)
    assert ended is not None and ended.stage == "term:offboarded", "an ended term reads without a worker"
    assert ended.term_end == end
