"""Approvals carry the identity the caller authenticated as; with four-eyes on, the starter cannot approve."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import GateAnswer
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.onboarding import OnboardingInput
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage


async def test_the_starter_cannot_approve_its_own_run_when_four_eyes_is_on(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        alice = await client_as(dev_env, "alice@ops-host", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle = await alice.start_onboarding(example_tenant(unique_slug()))
        status = await wait_for_stage(alice, handle, "gate:approve_plan")
        assert status.plan_hash
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await alice.approve(handle.id, status.plan_hash)
        assert "four-eyes rule: 'alice@ops-host' started this run" in str(refused.value.cause)
        assert (await alice.status(handle.id)).stage == "gate:approve_plan", "the refusal changed nothing"
        answer = await bob.approve(handle.id, status.plan_hash)
        assert answer.endswith("approved by bob@ops-host")
        assert (await handle.result()).status == "completed"


async def test_a_run_that_does_not_record_its_starter_cannot_be_approved(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env) as queue:
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle = await bob.client.start_workflow(
            "TenantOnboarding",
            OnboardingInput(contract=example_tenant(unique_slug())),
            id=f"tenant/{unique_slug()}",
            task_queue=queue,
        )
        status = await wait_for_stage(bob, handle, "gate:approve_plan")
        with pytest.raises(WorkflowUpdateFailedError, match="Workflow update failed") as refused:
            await bob.approve(handle.id, status.plan_hash or "")
        assert "does not record who started it" in str(refused.value.cause)
        await bob.reject(handle.id, "test over")


async def test_every_gate_answer_of_the_starter_is_refused_and_its_signal_ignored(dev_env: WorkflowEnvironment) -> None:
    async with four_eyes_worker(dev_env, FakeWorld(present=True)) as queue:
        alice = await client_as(dev_env, "alice@ops-host", queue)
        bob = await client_as(dev_env, "bob@ops-host", queue)
        handle = await alice.start_offboarding(example_tenant(unique_slug()), purge_data=True)
        status = await wait_for_stage(alice, handle, "gate:approve_plan")
        await bob.approve(handle.id, status.plan_hash or "")
        await wait_for_stage(alice, handle, "gate:confirm_purge")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await alice.answer_gate(handle.id, "confirm_purge")
        assert "four-eyes rule: 'alice@ops-host' started this run" in str(refused.value.cause)
        await handle.signal("confirm_purge_signal", GateAnswer(approver="alice@ops-host"))
        assert await bob.answer_gate(handle.id, "confirm_purge") == "confirm_purge answered by bob@ops-host"
        result: OffboardingResult = await bob.result(handle.id, OffboardingResult)
    assert result.status == "completed"
    assert [(a.gate, a.approver) for a in result.approvals] == [
        ("approve_plan", "bob@ops-host"),
        ("confirm_purge", "bob@ops-host"),
    ], "the starter's signal answered nothing"
