"""The four-eyes rule counts a run's starter only when it is verified: the memo ``started_by`` is whatever the
starting client wrote, so it counts only with a start proof (memo ``started_by_proof``) that the starter's key signed
for this workflow id and type within minutes of the run's start.

The security review's attack: alice starts a run declaring ``started_by="bob@ops-host"`` (any Temporal client can set
a memo) and approves it herself with her own verified proof. The principals and keys are the session's
(tests/approvers.py); the worker has the shipped rules (tests/security/four_eyes.py).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO
from tenantflow.models.lifecycle import LifecycleInput
from tenantflow.models.onboarding import OnboardingInput, OnboardingResult
from tenantflow.models.proofs import StartProof, input_digest, start_statement
from tenantflow.models.run_ids import onboarding_id, tenant_of_run
from tenantflow.starter.client import TenantflowClient
from tests.approvers import session_approvers
from tests.security.four_eyes import bobs_approval, client_as, four_eyes_worker
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage
from tests.workflows.term_parent import start_lifecycle_child

HOW_TO_START = ("TENANTFLOW_APPROVAL_KEY", "through the HTTP API")


async def refusal(attempt: object) -> str:
    """The message a refused gate update failed with."""
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await attempt  # type: ignore[misc]
    return str(refused.value.cause)


async def started_raw(api: TenantflowClient, slug: str, memo: dict[str, Any]) -> tuple[WorkflowHandle[Any, Any], str]:
    """An onboarding of ``slug`` started with the plain Temporal client of ``api`` and the memo ``memo``, as any
    Temporal client can start one; its handle and plan hash once the plan gate is open."""
    handle = await api.client.start_workflow(
        "TenantOnboarding",
        OnboardingInput(contract=example_tenant(slug)),
        id=onboarding_id(slug),
        task_queue=api.task_queue,
        memo=memo,
    )
    status = await wait_for_stage(api, handle, "gate:approve_plan")
    assert status.plan_hash
    return handle, status.plan_hash


def signed_start(
    namespace: str, workflow_id: str, signer: str, started_by: str, issued_at: datetime, slug: str | None = None
) -> StartProof:
    """The start proof ``signer``'s key makes for ``started_by`` starting an onboarding as ``workflow_id`` with the
    input :func:`started_raw` starts the tenant ``slug`` with (by default the tenant ``workflow_id`` names)."""
    slug = slug or tenant_of_run(workflow_id) or ""
    digest = input_digest(OnboardingInput(contract=example_tenant(slug)))
    statement = start_statement(namespace, workflow_id, "TenantOnboarding", started_by, issued_at, digest)
    return StartProof(
        issued_at=issued_at, proof=session_approvers().signers[signer].sign(statement), input_sha256=digest
    )


async def test_a_declared_starter_does_not_let_its_declarer_approve(dev_env: WorkflowEnvironment) -> None:
    """Alice declares bob the starter, without a start proof or with one her own key made: her verified approval is
    refused, saying the starter is only declared and how to start runs that can be approved."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        unproven, plan_hash = await started_raw(alice, unique_slug(), {STARTED_BY_MEMO: "bob@ops-host"})
        message = await refusal(alice.approve(unproven.id, plan_hash))
        assert "this run's starter 'bob@ops-host' is only declared" in message
        assert "without a start proof" in message and all(fix in message for fix in HOW_TO_START), message

        slug = unique_slug()
        by_alice_for_bob = signed_start(
            dev_env.client.namespace, onboarding_id(slug), "alice", "bob@ops-host", datetime.now(UTC)
        )
        forged, forged_hash = await started_raw(
            alice, slug, {STARTED_BY_MEMO: "bob@ops-host", STARTED_BY_PROOF_MEMO: by_alice_for_bob}
        )
        message = await refusal(alice.approve(forged.id, forged_hash))
        assert "is only declared" in message and "is not an allowed signer for 'bob@ops-host'" in message, message
        for handle in (unproven, forged):
            status = await alice.status(handle.id)
            assert status.stage == "gate:approve_plan" and not status.approvals, "the refusals changed nothing"
            await alice.reject(handle.id, "test over")


async def test_a_start_proof_from_an_earlier_run_does_not_count(dev_env: WorkflowEnvironment) -> None:
    """Bob's genuine start proof of an earlier run of the same workflow id (signed ten minutes before this run
    started, as a memo copied from that run's history is), or of another workflow id, does not make alice's run
    bob's; the same proof issued now does (the control: only the issue time differs)."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        namespace = dev_env.client.namespace
        earlier = datetime.now(UTC) - timedelta(minutes=10)
        slug = unique_slug()
        copied = signed_start(namespace, onboarding_id(slug), "bob", "bob@ops-host", earlier)
        old, old_hash = await started_raw(alice, slug, {STARTED_BY_MEMO: "bob@ops-host", STARTED_BY_PROOF_MEMO: copied})
        message = await refusal(alice.approve(old.id, old_hash))
        assert "start proof was issued at" in message and "not within 0:05:00 of this run's start" in message
        assert all(fix in message for fix in HOW_TO_START), message

        slug = unique_slug()
        other = signed_start(namespace, onboarding_id(unique_slug()), "bob", "bob@ops-host", datetime.now(UTC), slug)
        moved, moved_hash = await started_raw(
            alice, slug, {STARTED_BY_MEMO: "bob@ops-host", STARTED_BY_PROOF_MEMO: other}
        )
        message = await refusal(alice.approve(moved.id, moved_hash))
        assert "its start proof does not count (the proof does not sign this answer" in message, message

        slug = unique_slug()
        fresh = signed_start(namespace, onboarding_id(slug), "bob", "bob@ops-host", datetime.now(UTC))
        now, now_hash = await started_raw(alice, slug, {STARTED_BY_MEMO: "bob@ops-host", STARTED_BY_PROOF_MEMO: fresh})
        assert (await alice.approve(now.id, now_hash)).endswith("approved by alice@laptop"), "bob's proof counts"
        assert (await now.result())["status"] == "completed"
        for handle in (old, moved):
            await alice.reject(handle.id, "test over")


async def test_a_signed_start_is_approved_by_another_principal_only(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle = await alice.start_onboarding(example_tenant(unique_slug()))
        memo = await handle.describe()
        assert await memo.memo_value(STARTED_BY_MEMO, type_hint=str) == "alice@laptop"
        start = await memo.memo_value(STARTED_BY_PROOF_MEMO, type_hint=StartProof)
        assert abs(start.issued_at - datetime.now(UTC)) < timedelta(minutes=1)
        status = await wait_for_stage(alice, handle, "gate:approve_plan")
        assert status.plan_hash
        message = await refusal(alice.approve(handle.id, status.plan_hash))
        assert "'alice@laptop' started this run and cannot approve it" in message, message
        assert (await bob.approve(handle.id, status.plan_hash)).endswith("approved by bob@ops-host")
        result: OnboardingResult = await handle.result()
    assert [(a.approver, a.established) for a in result.approvals] == [("bob@ops-host", "verified")]


async def test_a_starter_that_is_no_string_is_no_starter_and_fails_no_workflow_task(
    dev_env: WorkflowEnvironment,
) -> None:
    """``temporal workflow start --memo started_by=42`` makes a number of the starter: approvals are refused (the
    update) or ignored (the signal), and the run goes on waiting at its gate. (Reading the memo as a string used to
    raise a converter error there, which failed the whole run when it came with the signal.)"""
    async with four_eyes_worker(dev_env) as queue:
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle, plan_hash = await started_raw(bob, unique_slug(), {STARTED_BY_MEMO: 42})
        run_id = (await handle.describe()).run_id
        assert run_id
        signal = bobs_approval(dev_env.client.namespace, handle.id, run_id, plan_hash)
        await handle.signal("approve_plan_signal", signal)
        await asyncio.sleep(1)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING, "the signal ended the run"
        status = await bob.status(handle.id)
        assert status.stage == "gate:approve_plan" and not status.approvals, "the signal was ignored"
        message = await refusal(bob.approve(handle.id, plan_hash))
        assert "does not record who started it (memo 'started_by' is missing or not a string)" in message
        assert all(fix in message for fix in HOW_TO_START), message
        await bob.reject(handle.id, "test over")
        assert (await handle.result())["status"] == "rejected"
        failed = [
            event
            async for event in handle.fetch_history_events()
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
    assert not failed, "reading the memo failed a workflow task"


async def test_a_renewal_asked_for_without_proof_is_only_declared(dev_env: WorkflowEnvironment) -> None:
    """Where renew needs no verified requester (verified approvers off for it) but four-eyes holds, alice asking
    for a renewal in bob's name and approving it herself is refused: the requester counts only with a proof."""
    slug = f"tenant-r{unique_slug()[-6:]}"
    async with four_eyes_worker(dev_env, lifecycle_too=True, TENANTFLOW_VERIFIED_APPROVERS="") as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        end = await dev_env.get_current_time() + timedelta(days=365)
        params = LifecycleInput(contract=example_tenant(slug), term_end=end, reminder_days=[30])
        lifecycle = await start_lifecycle_child(dev_env.client, queue, params)
        asked = await lifecycle.execute_update("renew", {"days": 30, "approver": "bob@ops-host"}, result_type=dict)
        plan_hash = asked["pending_renewal"]["plan_hash"]
        message = await refusal(alice.approve(lifecycle.id, plan_hash))
        assert "the renewal was asked for by 'bob@ops-host' without proof" in message, message
        assert "TENANTFLOW_APPROVAL_KEY" in message and "through the HTTP API" in message
        await lifecycle.terminate("test over")


async def test_a_start_without_a_key_warns_that_nobody_can_approve_it(
    dev_env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    """A client without TENANTFLOW_APPROVAL_KEY still starts (four-eyes may be off), but says at once what the
    operator would otherwise learn only at the gate."""
    unsigned = TenantflowClient(dev_env.client, "no-queue", signer=None, identity="alice@laptop")
    with caplog.at_level(logging.WARNING, logger="tenantflow.starter.signing"):
        arg = OnboardingInput(contract=example_tenant("tenant-x"))
        memo = await unsigned.start_memo("tenant/tenant-x", "TenantOnboarding", "alice@laptop", arg)
    assert memo == {STARTED_BY_MEMO: "alice@laptop"}, "no proof without a key"
    [warning] = [r.getMessage() for r in caplog.records if r.name == "tenantflow.starter.signing"]
    assert "alice@laptop starts tenant/tenant-x without a start proof" in warning
    assert "nobody can approve it; set TENANTFLOW_APPROVAL_KEY" in warning
