"""``renew`` is a gate: under the worker's shipped rules a renewal asked for by one principal waits until another
principal approves it, verified (issue 25: "renew waits for an approval under four-eyes")."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.lifecycle import LifecycleInput, RenewTerm
from tests.approvers import session_approvers
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.workflows.contract import example_tenant
from tests.workflows.lifecycle_harness import wait_renewed
from tests.workflows.term_parent import start_lifecycle_child


async def refusal(attempt: object) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await attempt  # type: ignore[misc]
    return str(refused.value.cause)


async def test_renew_waits_for_another_principals_verified_approval(dev_env: WorkflowEnvironment) -> None:
    slug = f"tenant-r{uuid.uuid4().hex[:6]}"
    bob_key = session_approvers().signers["bob"]
    async with four_eyes_worker(dev_env, lifecycle_too=True) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        end = await dev_env.get_current_time() + timedelta(days=365)
        params = LifecycleInput(contract=example_tenant(slug), term_end=end, reminder_days=[30])
        lifecycle = await start_lifecycle_child(dev_env.client, queue, params)
        declared = lifecycle.execute_update("renew", RenewTerm(days=90, approver="alice@laptop"), result_type=str)
        message = await refusal(declared)
        assert "renew of TenantLifecycle needs a verified approver" in message
        assert f"`tenantflow renew {slug} --days N` with TENANTFLOW_APPROVAL_KEY set" in message, message

        asked = await alice.renew(slug, 90, "next quarter")
        pending = asked.pending_renewal
        assert asked.term_end == end and pending is not None, "the renewal waits; the end has not moved"
        assert (pending.days, pending.requested_by) == (90, "alice@laptop")
        assert pending.verified_by == session_approvers().signers["alice"].fingerprint
        status = await alice.status(lifecycle.id)
        assert status.stage == "gate:approve_plan" and status.plan_hash == pending.plan_hash
        assert f"tenantflow approve {lifecycle.id} --plan-hash {pending.plan_hash}" in status.gates[0].how_to_answer
        assert "waits for approval" in await refusal(bob.renew(slug, 10))

        for identity in ("alice@laptop", "ALICE"):
            as_alice = await client_as(dev_env, identity, queue, session_approvers().signers["alice"])
            message = await refusal(as_alice.approve(lifecycle.id, pending.plan_hash))
            assert "'alice@laptop' started this run and cannot approve it" in message, identity
        assert (await alice.term(slug)) == asked, "the refusals changed nothing"

        answer = await bob.approve(lifecycle.id, pending.plan_hash)
        assert answer == f"renewal {pending.plan_hash} by 90 days approved by bob@ops-host"
        term = await wait_renewed(bob, slug)
        await lifecycle.terminate("test over")
    [renewal] = term.renewals
    assert term.term_end == end + timedelta(days=90) and term.pending_renewal is None
    assert (renewal.requested_by, renewal.approver, renewal.verified_by) == (
        "alice@laptop",
        "bob@ops-host",
        bob_key.fingerprint,
    )
