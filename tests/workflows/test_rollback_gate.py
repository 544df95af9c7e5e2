"""A rollback whose undo keeps failing waits at ``retry_rollback`` with the objects left, and can be resumed
(by the plain ``temporal`` CLI: ``retry_rollback`` is an update of its own name)."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import GateAnswer
from tenantflow.models.rollback import Leftover
from tenantflow.models.status import RunStatus
from tests.starter.test_temporal_cli import temporal
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

FAILING_UNDO = "slurm.undo:accounts"


async def test_failed_undo_waits_at_retry_rollback_and_resumes(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(fail_at="storage.quotas", undo_failures={FAILING_UNDO: 1})
    slug = f"tenant-r{uuid.uuid4().hex[:8]}"
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(slug))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        await api.approve(handle.id, status.plan_hash or "")
        status = await wait_for_stage(api, handle, "gate:retry_rollback")
        why = f"Forbidden: injected undo failure at {FAILING_UNDO}"
        assert {item.model_copy(update={"kind": ""}) for item in status.leftovers} == {
            Leftover(layer="slurm", kind="", name=f"{slug}-accounts", step="slurm.accounts", why=why)
        }
        assert {item.kind for item in status.leftovers} == {"account", "Thing"}
        undone_before = [c for c in world.calls if ".undo:" in c]
        assert "identity.undo:group" in undone_before, "the other undos ran past the failing one"
        assert any("--name retry_rollback" in how for gate in status.gates for how in gate.how_to_answer)
        update = ("workflow", "update", "execute", "--workflow-id", handle.id, "--name", "retry_rollback")
        assert "retry_rollback answered by ops" in await temporal(api, *update, "--input", '{"approver": "ops"}')
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        final = await api.status(handle.id)
    assert "injected failure at storage.quotas" in str(failure.value.cause.__cause__)
    assert [c for c in world.calls if ".undo:" in c] == [*undone_before, FAILING_UNDO]
    assert final.stage == "rolled-back" and not final.leftovers


async def test_unanswered_retry_rollback_ends_with_every_object_left(ts_env: WorkflowEnvironment) -> None:
    world = FakeWorld(fail_at="kube.rbac", undo_failures={"kube.undo:namespace": 99, "identity.undo:users": 99})
    slug = "tenant-left"
    async with fake_worker(ts_env, world) as api:
        handle = await api.start_onboarding(
            example_tenant(slug), approval_escalate_after_s=3600, approval_expire_after_s=2 * 24 * 3600
        )
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        await api.approve(handle.id, status.plan_hash or "")
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        final: RunStatus = await api.status(handle.id)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "RollbackIncomplete"
    left = [Leftover.model_validate(item) for item in cause.details]
    assert {(item.layer, item.kind, item.name) for item in left} == {
        ("kube", "Namespace", f"{slug}-namespace"),
        ("kube", "Thing", f"{slug}-namespace"),
        ("identity", "User", f"{slug}-users"),
        ("identity", "Thing", f"{slug}-users"),
    }
    assert all("injected undo failure" in item.why for item in left)
    assert final.stage == "rollback-incomplete" and final.leftovers == left


async def test_offboarding_teardown_waits_at_retry_rollback_answered_by_signal(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True, undo_failures={"kube.undo:namespace": 1})
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_offboarding(example_tenant(f"tenant-s{uuid.uuid4().hex[:8]}"))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        await api.approve(handle.id, status.plan_hash or "")
        status = await wait_for_stage(api, handle, "gate:retry_rollback")
        assert {(item.kind, item.step) for item in status.leftovers} == {("Namespace", "kube.namespace")}
        assert "identity.undo:group" in world.calls, "the teardown went on past the failed undo"
        await handle.signal("retry_rollback_signal", GateAnswer(approver="ops"))
        result = await handle.result()
    assert result.status == "completed"
    assert world.calls.count("kube.undo:namespace") == 2 and world.calls.count("identity.undo:group") == 1
    assert "tenant-s" in next(r.name for r in result.removed if r.kind == "Namespace")
