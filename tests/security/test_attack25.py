"""Issue 25's attacks on the approval checks, each refused: a start proof copied into a run that replaced the
proven one with another input, a lifecycle (and so an expiry offboarding) no onboarding started, a waiting renewal
forged in a lifecycle's input, and a start-proof memo whose issue time overflows in UTC."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO
from tenantflow.models.lifecycle import LifecycleInput, PendingRenewal
from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.run_ids import lifecycle_id, offboarding_id, onboarding_id
from tenantflow.workflows.lifecycle import TenantLifecycle
from tests.security.four_eyes import bobs_approval, client_as, four_eyes_worker
from tests.security.test_verified_starter import refusal
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage
from tests.workflows.term_parent import OffboardingParent, start_as_child, start_lifecycle_child


async def test_a_start_proof_copied_into_a_replacing_run_with_another_input_does_not_count(
    dev_env: WorkflowEnvironment,
) -> None:
    """Bob starts tenant/<slug> properly. Alice copies its memo and, within 5 minutes, replaces the run
    (TERMINATE_EXISTING) with her own start of the same id and type but another input: the start proof binds bob's
    input, so her run's starter is only declared and her approval is refused; nothing is approved."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        slug = unique_slug()
        bobs = await bob.start_onboarding(example_tenant(slug))
        described = await bobs.describe()
        copied = {key: await described.memo_value(key) for key in (STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO)}
        contract = example_tenant(slug)
        mine = await alice.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=contract.model_copy(update={"users": contract.users[:1]})),
            id=onboarding_id(slug),
            task_queue=queue,
            memo=copied,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
        )
        status = await wait_for_stage(alice, mine, "gate:approve_plan")
        assert status.plan_hash
        message = await refusal(alice.approve(mine.id, status.plan_hash))
        assert "this run's starter 'bob@ops-host' is only declared" in message, message
        assert "its start proof is for another input" in message and "than this run was started with" in message
        after = await alice.status(mine.id)
        assert after.stage == "gate:approve_plan" and not after.approvals, "the refusal approved nothing"
        await alice.reject(mine.id, "test over")


async def test_a_lifecycle_without_a_parent_fails_and_only_a_lifecycle_exempts_its_offboarding(
    dev_env: WorkflowEnvironment,
) -> None:
    """Alice starts a TenantLifecycle of any tenant with a term that already ended: it fails at once, naming why, and
    starts no offboarding. Nor does her own workflow that starts offboard/<slug> as its child (naming itself the
    starter) make that offboarding approvable by anyone: only the tenant's lifecycle exempts it."""
    slug = f"tenant-x{unique_slug()[-6:]}"
    async with four_eyes_worker(dev_env, lifecycle_too=True) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        past = await dev_env.get_current_time() - timedelta(days=1)
        forged = await alice.client.start_workflow(
            TenantLifecycle.run,
            LifecycleInput(contract=example_tenant(slug), term_end=past, reminder_days=[], reminders_done=[]),
            id=f"anything/{slug}",
            task_queue=queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await forged.result()
        assert "was started without a parent workflow" in str(failed.value.cause), failed.value.cause
        with pytest.raises(RPCError):
            await alice.handle(offboarding_id(slug)).describe()

        parent_id = f"anything/{slug}"
        await start_as_child(
            alice.client, OffboardingParent, queue, OffboardingInput(contract=example_tenant(slug)), parent_id
        )
        offboarding = alice.handle(offboarding_id(slug))
        status = await wait_for_stage(alice, offboarding, "gate:approve_plan", timeout_s=60)
        assert status.plan_hash
        message = await refusal(alice.approve(offboarding.id, status.plan_hash))
        assert f"this run's starter {parent_id!r} is only declared" in message, message
        after = await alice.status(offboarding.id)
        assert after.stage == "gate:approve_plan" and not after.approvals, "the refusal approved nothing"
        await alice.reject(offboarding.id, "test over")


async def test_a_pending_renewal_in_a_first_runs_input_is_ignored(dev_env: WorkflowEnvironment) -> None:
    """Alice starts lifecycle/<slug> with a pending renewal 'asked for by bob, verified': without a parent the run
    fails at once; started as a child, its first run ignores the renewal, so there is nothing for her to approve."""
    slug = f"tenant-y{unique_slug()[-6:]}"
    async with four_eyes_worker(dev_env, lifecycle_too=True) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        now = await dev_env.get_current_time()
        pending = PendingRenewal(
            days=3650,
            requested_by="bob@ops-host",
            comment="",
            at=now,
            plan_hash=PendingRenewal.hash_of(3650, "bob@ops-host", now),
            verified_by="SHA256:forged",
        )
        forged = LifecycleInput(
            contract=example_tenant(slug), term_end=now + timedelta(days=1), reminder_days=[], pending_renewal=pending
        )
        handle = await alice.client.start_workflow(TenantLifecycle.run, forged, id=lifecycle_id(slug), task_queue=queue)
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        assert "was started without a parent workflow" in str(failed.value.cause), failed.value.cause

        child = await start_lifecycle_child(alice.client, queue, forged)
        term = await alice.term(slug)
        assert term is not None and term.pending_renewal is None, "the forged renewal was taken from the input"
        message = await refusal(alice.approve(child.id, pending.plan_hash))
        assert f"no renewal of {slug} waits for approval" in message, message
        assert (await alice.term(slug)) == term, "the refusal changed nothing"
        await child.terminate("test over")


async def test_an_overflowing_start_proof_memo_fails_no_workflow_task(dev_env: WorkflowEnvironment) -> None:
    """A start-proof memo whose issue time overflows in UTC is no start proof: the starter is only declared, a proven
    approval signal is ignored with a warning, and no workflow task fails (the run stays at its gate)."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        slug = unique_slug()
        memo = {
            STARTED_BY_MEMO: "alice@laptop",
            STARTED_BY_PROOF_MEMO: {"issued_at": "9999-12-31T23:59:59-23:59", "proof": "x"},
        }
        handle = await alice.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=example_tenant(slug)),
            id=onboarding_id(slug),
            task_queue=queue,
            memo=memo,
        )
        status = await wait_for_stage(alice, handle, "gate:approve_plan")
        assert status.plan_hash
        run_id = (await handle.describe()).run_id
        assert run_id
        await handle.signal(
            "approve_plan_signal", bobs_approval(dev_env.client.namespace, handle.id, run_id, status.plan_hash)
        )
        await asyncio.sleep(3)
        failed = [
            event.workflow_task_failed_event_attributes.failure.message
            async for event in handle.fetch_history_events()
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        after = await alice.status(handle.id)
        message = await refusal(bob.approve(handle.id, status.plan_hash))
        await alice.reject(handle.id, "test over")
    assert not failed, f"a workflow task failed: {failed}"
    assert after.stage == "gate:approve_plan" and not after.approvals, "the ignored signal approved nothing"
    assert "this run's starter 'alice@laptop' is only declared" in message and "without a start proof" in message
