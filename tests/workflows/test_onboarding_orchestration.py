"""Onboarding orchestration on the real Temporal dev server: gates, saga order, refusals."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.runbook import APPLY
from tenantflow.starter.client import RunAlreadyActive
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


def unique_slug() -> str:
    return f"tenant-t{uuid.uuid4().hex[:8]}"


async def test_approved_plan_applies_every_step_in_runbook_order(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(unique_slug()))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan is not None and status.plan_hash == status.plan.plan_hash
        assert not {c for c in world.calls} & {s.name for s in APPLY}
        with pytest.raises(WorkflowUpdateFailedError):
            await api.approve(handle.id, "0" * 16)
        await api.approve(handle.id, status.plan_hash)
        result: OnboardingResult = await handle.result()
    assert result.status == "completed"
    applied = [c for c in world.calls if c in {s.name for s in APPLY}]
    assert applied == [s.name for s in APPLY]
    assert not [c for c in world.calls if ".undo" in c]
    assert result.handover is not None and result.handover.markdown.startswith("#")


async def test_rejected_plan_ends_cleanly_without_writes(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(unique_slug()))
        await wait_for_stage(api, handle, "gate:approve_plan")
        await api.reject(handle.id, "wrong nodes")
        result: OnboardingResult = await handle.result()
    assert result.status == "rejected"
    assert "wrong nodes" in result.message
    assert not [c for c in world.calls if not c.endswith((".preflight", ".plan"))]


async def test_failure_unwinds_in_runbook_rollback_order(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(fail_at="slurm.users")
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(unique_slug()))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        final = await api.status(handle.id)
    undone = [c.split(":")[1] and c for c in world.calls if ".undo:" in c]
    assert undone == [
        "slurm.undo:users",
        "slurm.undo:qos",
        "slurm.undo:accounts",
        "kube.undo:rbac",
        "kube.undo:network_policy",
        "kube.undo:binding",
        "kube.undo:quota",
        "kube.undo:namespace",
        "capacity.undo:wait_reservation",
        "capacity.undo:reservation",
        "identity.undo:verify_ldap",
        "identity.undo:users",
        "identity.undo:group",
    ]
    assert final.stage == "rolled-back"


async def test_preflight_failure_writes_nothing(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(preflight_error="only 3 healthy h100-8x nodes are free, 8 needed")
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(unique_slug()))
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert "only 3 healthy h100-8x nodes are free" in str(failure.value.cause)
    assert "free some nodes" in str(failure.value.cause)
    assert all(c.endswith(".preflight") for c in world.calls)


async def test_second_start_for_same_tenant_is_refused(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    contract = example_tenant(unique_slug())
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(contract)
        await wait_for_stage(api, handle, "gate:approve_plan")
        with pytest.raises(RunAlreadyActive, match=f"tenant/{contract.slug} is already in progress"):
            await api.start_onboarding(contract)
        await api.reject(handle.id, "test over")
        await handle.result()


async def test_cancel_after_approval_rolls_back(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(unique_slug()))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        with pytest.raises(WorkflowUpdateFailedError):
            await api.answer_gate(handle.id, "approve_plan")
        await api.approve(handle.id, status.plan_hash)
        await wait_for_stage(api, handle, "apply:")
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    assert any(".undo:" in c for c in world.calls)
