"""TenantOffboarding orchestration on the dev server: teardown plan, data kept unless purge is confirmed."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import ApprovePlan, GateAnswer
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.plan import Action
from tenantflow.models.run_ids import offboarding_id
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def offboard(dev_env: WorkflowEnvironment, world: FakeWorld, purge: bool) -> OffboardingResult:
    contract = example_tenant(f"tenant-o{uuid.uuid4().hex[:8]}")
    async with fake_worker(dev_env, world) as api:
        handle = await dev_env.client.start_workflow(
            "TenantOffboarding",
            OffboardingInput(contract=contract, purge_data=purge),
            id=offboarding_id(contract.slug),
            task_queue=api.task_queue,
            result_type=OffboardingResult,
        )
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan is not None and status.plan_hash
        assert not [c for c in world.calls if ".undo" in c]
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash))
        if purge:
            await wait_for_stage(api, handle, "gate:confirm_purge")
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update("answer_gate", args=["resume_submissions", GateAnswer()])
            await handle.execute_update("answer_gate", args=["confirm_purge", GateAnswer(approver="ops")])
        result: OffboardingResult = await handle.result()
    return result


async def test_offboarding_keeps_data_and_tears_down_in_rollback_order(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    result = await offboard(dev_env, world, purge=False)
    assert result.status == "completed"
    assert result.plan is not None
    kept = {p.kind for p in result.plan.steps if p.action is Action.leave}
    assert kept == {"WekaOrganization", "WekaQuota"}
    undone = [c for c in world.calls if ".undo:" in c]
    assert undone == [
        "login.undo:release",
        "slurm.undo:partition",
        "slurm.undo:users",
        "slurm.undo:qos",
        "slurm.undo:accounts",
        "kube.undo:rbac",
        "kube.undo:network_policy",
        "kube.undo:binding",
        "kube.undo:quota",
        "kube.undo:namespace",
        "capacity.undo:reservation",
        "storage.undo:csi",
        "identity.undo:users",
        "identity.undo:group",
    ]
    assert "storage.undo:filesystems" not in world.calls and "storage.undo:quotas" not in world.calls
    assert "storage.undo:csi" in world.calls and "identity.undo:users" in world.calls


async def test_purge_needs_the_confirm_purge_gate(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    result = await offboard(dev_env, world, purge=True)
    assert result.status == "completed" and not result.kept
    assert "storage.undo:filesystems" in world.calls and "storage.undo:quotas" in world.calls


async def test_the_tenants_jobs_are_planned_then_cancelled_before_anything_is_removed(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld(present=True, jobs=["101", "102"], late_jobs=["103"])
    result = await offboard(dev_env, world, purge=False)
    assert result.status == "completed"
    assert result.plan is not None
    assert [(p.layer, p.kind, p.name, p.action) for p in result.plan.steps[:2]] == [
        ("slurm", "job", "101", Action.delete),
        ("slurm", "job", "102", Action.delete),
    ]
    steps = [c for c in world.calls if ":" in c]
    assert steps[0] == "slurm.cancel_jobs:101,102", steps
    assert steps[1] == "login.undo:release", steps
    assert [r.name for r in result.removed if r.kind == "job"] == ["101", "102", "103"]
    assert "103" in result.message and "101" not in result.message, result.message
