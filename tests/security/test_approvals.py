"""Approvals prove who approved, and four-eyes compares principals: the worker's shipped rules on the dev server.

Issue 25's acceptance: a raw ``approve_plan`` update with ``{"plan_hash": H, "approver": "bob"}`` and no proof does
not approve and says how to; a run started by ``alice@laptop`` cannot be approved by ``alice``, ``Alice@laptop``,
``alice@laptop2`` or alice's API token, only by another principal's verified identity; a proof for run A replayed
into a rerun B of the same plan is refused. The principals and keys are the session's (tests/approvers.py).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import ApprovePlan, GateAnswer, SmokeFailedAnswer
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.onboarding import OnboardingInput, OnboardingResult
from tenantflow.models.proofs import ApprovalStatement
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import binary
from tests.approvers import API, session_approvers
from tests.security.four_eyes import UNSIGNED, bobs_approval, client_as, four_eyes_worker
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage


async def refusal(attempt: object) -> str:
    """The message a refused gate update failed with."""
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await attempt  # type: ignore[misc]
    return str(refused.value.cause)


async def at_plan_gate(api: TenantflowClient, slug: str) -> tuple[WorkflowHandle[object, object], str]:
    handle = await api.start_onboarding(example_tenant(slug))
    status = await wait_for_stage(api, handle, "gate:approve_plan")
    assert status.plan_hash
    return handle, status.plan_hash


async def test_a_raw_update_without_proof_does_not_approve_and_says_how(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        raw = handle.execute_update("approve_plan", {"plan_hash": plan_hash, "approver": "bob"}, result_type=str)
        message = await refusal(raw)
        assert "needs a verified approver" in message and "'bob' is only declared" in message
        assert f"tenantflow approve {handle.id}" in message and "TENANTFLOW_APPROVAL_KEY" in message
        status = await alice.status(handle.id)
        assert status.stage == "gate:approve_plan" and not status.approvals, "the refusal changed nothing"
        await alice.reject(handle.id, "test over")


async def test_a_raw_approve_plan_signal_without_proof_is_ignored(dev_env: WorkflowEnvironment) -> None:
    """The signal form cannot be refused, so the run ignores it: the plan waits until bob's verified update."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        await handle.signal("approve_plan_signal", {"plan_hash": plan_hash, "approver": "bob@ops-host"})
        assert (await bob.approve(handle.id, plan_hash)).endswith("approved by bob@ops-host"), "the gate still waited"
        result: OnboardingResult = await handle.result()
    assert [(a.approver, a.established) for a in result.approvals] == [("bob@ops-host", "verified")]


async def test_the_temporal_cli_cannot_approve_without_proof(dev_env: WorkflowEnvironment) -> None:
    """The acceptance check as written: ``temporal workflow update execute --name approve_plan --input '{"plan_hash":
    H, "approver": "bob"}'`` (the real CLI, a client with no key) does not approve, and says how to."""
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        update = ["workflow", "update", "execute", "--workflow-id", handle.id, "--name", "approve_plan"]
        cli = await asyncio.create_subprocess_exec(
            binary("temporal"),
            *update,
            "--input",
            json.dumps({"plan_hash": plan_hash, "approver": "bob"}),
            "--address",
            dev_env.client.service_client.config.target_host,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await cli.communicate()
        assert cli.returncode != 0, out.decode()
        assert "needs a verified approver" in err.decode() and "tenantflow approve" in err.decode()
        assert (await alice.status(handle.id)).stage == "gate:approve_plan"
        await alice.reject(handle.id, "test over")


async def test_alices_run_is_approved_only_by_another_principals_verified_identity(
    dev_env: WorkflowEnvironment,
) -> None:
    keys, world = session_approvers().signers, FakeWorld()
    async with four_eyes_worker(dev_env, world) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        same_principal = "started this run and cannot approve it"
        for identity in ("alice", "Alice@laptop"):
            as_alice = await client_as(dev_env, identity, queue, keys["alice"])
            assert same_principal in await refusal(as_alice.approve(handle.id, plan_hash)), identity
        api = await client_as(dev_env, "tenantflow-api@api-host", queue)  # signs for anyone, as the HTTP API does
        message = await refusal(api.approve(handle.id, plan_hash, on_behalf_of="alice@laptop2"))
        assert "'alice@laptop2' is no principal" in message
        assert same_principal in await refusal(api.approve(handle.id, plan_hash, on_behalf_of="alice"))
        bob = await client_as(dev_env, "bob@ops-host", queue)
        assert (await bob.approve(handle.id, plan_hash)).endswith("approved by bob@ops-host")
        result: OnboardingResult = await handle.result()
        status = await bob.status(handle.id)
    assert result.status == "completed"
    [record] = world.records
    assert status.approvals == result.approvals == record.run.approvals, "status, result and record say the same"
    [approval] = result.approvals
    assert (approval.approver, approval.established) == ("bob@ops-host", "verified")
    assert approval.verified_by == keys["bob"].fingerprint
    assert result.handover is not None and f"by bob@ops-host (verified, key {keys['bob'].fingerprint})" in (
        result.handover.markdown
    )


async def test_a_proof_for_one_run_is_refused_by_a_rerun_of_the_same_plan(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        slug = unique_slug()
        first, plan_hash = await at_plan_gate(alice, slug)
        run_a = (await first.describe()).run_id
        assert run_a
        approval = bobs_approval(dev_env.client.namespace, first.id, run_a, plan_hash)
        await first.execute_update("approve_plan", approval, result_type=str)
        assert (await first.result()).status == "completed"
        rerun, rerun_hash = await at_plan_gate(alice, slug)
        assert rerun_hash == plan_hash, "the rerun publishes the same plan"
        message = await refusal(rerun.execute_update("approve_plan", approval, result_type=str))
        assert "the proof does not sign this answer" in message and "it was made for another run" in message
        assert (await alice.status(rerun.id)).stage == "gate:approve_plan"
        await alice.reject(rerun.id, "test over")


async def test_a_proof_for_another_gate_or_by_an_unlisted_key_is_refused(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        run_id = (await handle.describe()).run_id
        bob_key = session_approvers().signers["bob"]
        for_purge = ApprovalStatement(
            namespace=dev_env.client.namespace,
            workflow_id=handle.id,
            run_id=run_id,
            gate="confirm_purge",
            plan=plan_hash,
            approver="bob@ops-host",
        )
        wrong_gate = ApprovePlan(plan_hash=plan_hash, approver="bob@ops-host", proof=bob_key.sign(for_purge))
        assert "does not sign this answer" in await refusal(handle.execute_update("approve_plan", wrong_gate))
        as_bob_by_alice = await client_as(dev_env, "bob@ops-host", queue, session_approvers().signers["alice"])
        message = await refusal(as_bob_by_alice.approve(handle.id, plan_hash))
        assert "is not an allowed signer for 'bob@ops-host'" in message
        await alice.reject(handle.id, "test over")


async def test_declared_approvers_count_where_the_policy_lets_them(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env, TENANTFLOW_VERIFIED_APPROVERS="TenantOffboarding") as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob_ui = await client_as(dev_env, "bob@ops-host", queue, UNSIGNED)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        await bob_ui.approve(handle.id, plan_hash)
        result: OnboardingResult = await handle.result()
    [approval] = result.approvals
    assert (approval.approver, approval.established, approval.verified_by) == ("bob@ops-host", "declared", "")
    assert approval.describe_established().endswith("(declared)")


async def test_a_run_whose_starter_is_no_principal_cannot_be_approved(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        stranger = await client_as(dev_env, "mallory@elsewhere", queue, session_approvers().signers[API])
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle, plan_hash = await at_plan_gate(stranger, unique_slug())
        assert "starter 'mallory@elsewhere' is no principal" in await refusal(bob.approve(handle.id, plan_hash))
        unrecorded = await bob.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=example_tenant(unique_slug())),
            id=f"tenant/{unique_slug()}",
            task_queue=queue,
        )
        status = await wait_for_stage(bob, unrecorded, "gate:approve_plan")
        assert "does not record who started it" in await refusal(bob.approve(unrecorded.id, status.plan_hash or ""))
        await bob.reject(handle.id, "test over")
        await bob.reject(unrecorded.id, "test over")


async def test_every_gate_answer_of_the_starter_is_refused_and_its_signal_ignored(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env, FakeWorld(present=True)) as queue:
        alice = await client_as(dev_env, "alice@ops-host", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle = await alice.start_offboarding(example_tenant(unique_slug()), purge_data=True)
        status = await wait_for_stage(alice, handle, "gate:approve_plan")
        await bob.approve(handle.id, status.plan_hash or "")
        await wait_for_stage(alice, handle, "gate:confirm_purge")
        assert "'alice@ops-host' started this run" in await refusal(alice.answer_gate(handle.id, "confirm_purge"))
        await handle.signal("confirm_purge_signal", GateAnswer(approver="alice@ops-host"))
        await handle.signal("confirm_purge_signal", GateAnswer(approver="bob@ops-host"))  # declared: ignored
        assert await bob.answer_gate(handle.id, "confirm_purge") == "confirm_purge answered by bob@ops-host"
        result: OffboardingResult = await bob.result(handle.id, OffboardingResult)
    assert result.status == "completed"
    assert [(a.gate, a.approver, a.established) for a in result.approvals] == [
        ("approve_plan", "bob@ops-host", "verified"),
        ("confirm_purge", "bob@ops-host", "verified"),
    ], "neither the starter's signal nor a declared one answered"


async def test_a_smoke_failed_proof_signs_its_choice(dev_env: WorkflowEnvironment) -> None:
    """Issue 23's gate: its proof signs the choice, so a signature for re-running the smoke checks never waives them
    (or rolls the tenant back); four-eyes holds there as at every gate."""
    async with four_eyes_worker(dev_env, FakeWorld(smoke_errors={"smoke.storage": 1})) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        await bob.approve(handle.id, plan_hash)
        opened_at = (await wait_for_stage(alice, handle, "gate:smoke_failed")).gates[0].opened_at
        rerun = ApprovalStatement(
            namespace=dev_env.client.namespace,
            workflow_id=handle.id,
            run_id=(await handle.describe()).run_id,
            gate="smoke_failed",
            plan=f"choice=rerun opened_at={opened_at.isoformat()}",
            approver="bob@ops-host",
        )
        proof = session_approvers().signers["bob"].sign(rerun)
        waiver = SmokeFailedAnswer(
            approver="bob@ops-host", choice="waive", comment="looks fine", proof=proof, opened_at=opened_at
        )
        assert "does not sign this answer" in await refusal(handle.execute_update("smoke_failed", waiver))
        assert "'alice@laptop' started this run" in await refusal(alice.answer_smoke_failed(handle.id, "rerun"))
        assert await bob.answer_smoke_failed(handle.id, "rerun") == "smoke_failed answered by bob@ops-host"
        result: OnboardingResult = await bob.result(handle.id, OnboardingResult)
    assert result.status == "completed"
    assert [(a.gate, a.established) for a in result.approvals] == [
        ("approve_plan", "verified"),
        ("smoke_failed", "verified"),
    ]


async def reopened(api: TenantflowClient, handle: WorkflowHandle[object, object], after: datetime) -> datetime:
    """When ``smoke_failed`` opened again, after its opening at ``after`` was answered."""
    for _ in range(600):
        status = await api.status(handle.id)
        gate = next((g for g in status.gates if g.name == "smoke_failed"), None)
        if gate is not None and gate.opened_at > after:
            return gate.opened_at
        await asyncio.sleep(0.05)
    raise AssertionError(f"smoke_failed never opened again after {after}")


async def test_a_smoke_failed_answer_read_from_the_history_does_not_answer_the_gate_again(
    dev_env: WorkflowEnvironment,
) -> None:
    """Whoever reads the run's history (any Temporal client) holds bob's signed re-run: sent again when the re-run
    fails and the gate opens again, it must not answer that opening (nor would a waiver for the findings bob saw
    then count for the ones shown now): an answer and its proof are bound to the gate's opening."""
    async with four_eyes_worker(dev_env, FakeWorld(smoke_errors={"smoke.storage": 2})) as queue:
        alice = await client_as(dev_env, "alice@laptop", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle, plan_hash = await at_plan_gate(alice, unique_slug())
        await bob.approve(handle.id, plan_hash)
        first = (await wait_for_stage(alice, handle, "gate:smoke_failed")).gates[0].opened_at
        await bob.answer_smoke_failed(handle.id, "rerun")
        await reopened(alice, handle, first)
        history = await handle.fetch_history()
        [sent] = [
            e.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads[0].data
            for e in history.events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
            and e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name == "smoke_failed"
        ]
        replayed = json.loads(sent)
        assert replayed["proof"], "bob's answer carried his proof"
        await handle.signal("smoke_failed_signal", replayed)
        message = await refusal(handle.execute_update("smoke_failed", replayed, result_type=str))
        assert "which was answered" in message and "opened again" in message, message
        status = await alice.status(handle.id)
        assert status.stage == "gate:smoke_failed", "the replayed answer re-ran the smoke checks"
        assert [a.gate for a in status.approvals] == ["approve_plan", "smoke_failed"], status.approvals
        assert await bob.answer_smoke_failed(handle.id, "rerun") == "smoke_failed answered by bob@ops-host"
        result: OnboardingResult = await bob.result(handle.id, OnboardingResult)
    assert result.status == "completed"
