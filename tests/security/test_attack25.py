"""Attack pass on issue 25 (not product tests): each test PASSES when the attack WORKS."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO, ApprovePlan
from tenantflow.models.lifecycle import LifecycleInput, PendingRenewal
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.proofs import ApprovalStatement
from tenantflow.models.run_ids import lifecycle_id, offboarding_id, onboarding_id
from tenantflow.workflows.lifecycle import TenantLifecycle
from tests.approvers import session_approvers
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage


async def test_start_proof_replayed_into_a_replacing_run(dev_env: WorkflowEnvironment) -> None:
    """Bob starts tenant/<slug> properly. Alice copies its memo and, within 5 minutes, replaces the run
    (TERMINATE_EXISTING) with her own start of the same id and type: her run counts as bob's, she approves alone."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        slug = unique_slug()
        bobs = await bob.start_onboarding(example_tenant(slug))
        described = await bobs.describe()
        copied = {key: await described.memo_value(key) for key in (STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO)}
        mine = await alice.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=example_tenant(slug)),
            id=onboarding_id(slug),
            task_queue=queue,
            memo=copied,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
        )
        status = await wait_for_stage(alice, mine, "gate:approve_plan")
        assert status.plan_hash
        said = await alice.approve(mine.id, status.plan_hash)
        assert said.endswith("approved by alice@laptop"), said
        assert (await mine.result())["status"] == "completed"


async def test_forged_lifecycle_makes_an_offboarding_anyone_may_approve(dev_env: WorkflowEnvironment) -> None:
    """Alice starts a TenantLifecycle of any tenant with a term that already ended: its child offboard/<slug> is
    'started by the parent', so four-eyes lets alice (who asked for it) approve the teardown alone."""
    slug = f"tenant-x{unique_slug()[-6:]}"
    async with four_eyes_worker(dev_env, lifecycle_too=True) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        past = await dev_env.get_current_time() - timedelta(days=1)
        await alice.client.start_workflow(
            TenantLifecycle.run,
            LifecycleInput(contract=example_tenant(slug), term_end=past, reminder_days=[], reminders_done=[]),
            id=f"anything/{slug}",
            task_queue=queue,
        )
        offboarding = alice.handle(offboarding_id(slug))
        for _ in range(200):
            try:
                await offboarding.describe()
                break
            except Exception:
                await asyncio.sleep(0.1)
        status = await wait_for_stage(alice, offboarding, "gate:approve_plan", timeout_s=60)
        assert status.plan_hash
        said = await alice.approve(offboarding.id, status.plan_hash)
        assert said.endswith("approved by alice@laptop"), said
        assert (await offboarding.result())["status"] == "completed"


async def test_forged_pending_renewal_approved_by_its_requester(dev_env: WorkflowEnvironment) -> None:
    """Alice starts lifecycle/<slug> with a pending renewal 'asked for by bob, verified': she approves it alone.
    (She could also just start it with any term_end; the renew gate guards nothing against a Temporal client.)"""
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
        handle = await alice.client.start_workflow(
            TenantLifecycle.run,
            LifecycleInput(
                contract=example_tenant(slug),
                term_end=now + timedelta(days=1),
                reminder_days=[],
                pending_renewal=pending,
            ),
            id=lifecycle_id(slug),
            task_queue=queue,
        )
        await asyncio.sleep(1)
        said = await alice.approve(handle.id, pending.plan_hash)
        assert "approved by alice@laptop" in said, said
        await handle.terminate("test over")


async def test_overflowing_start_proof_memo_fails_workflow_tasks(dev_env: WorkflowEnvironment) -> None:
    """A start-proof memo whose issue time overflows in UTC raises OverflowError (not ValueError) in the approval
    check: a gate signal then fails the workflow task on every attempt (the run is stuck, the worker retries)."""
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
        statement = ApprovalStatement(
            namespace=dev_env.client.namespace,
            workflow_id=handle.id,
            run_id=run_id,
            gate="approve_plan",
            plan=status.plan_hash,
            approver="bob@ops-host",
        )
        proof = session_approvers().signers["bob"].sign(statement)
        await handle.signal(
            "approve_plan_signal", ApprovePlan(plan_hash=status.plan_hash, approver="bob@ops-host", proof=proof)
        )
        await asyncio.sleep(3)
        failed = [
            event
            async for event in handle.fetch_history_events()
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        for event in failed[:1]:
            print(event.workflow_task_failed_event_attributes.failure.message)
        await handle.terminate("test over")
    assert failed, "no workflow task failed"
