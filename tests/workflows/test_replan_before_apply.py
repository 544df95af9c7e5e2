"""Approval binds what is applied: an object appearing while the gate waited reopens ``approve_plan``."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import Finding
from tenantflow.models.runbook import APPLY, PLAN
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def test_changed_world_reopens_the_approval_with_the_new_plan(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-p{uuid.uuid4().hex[:8]}"))
        first = await wait_for_stage(api, handle, "gate:approve_plan")
        world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.adopt)]
        await api.approve(handle.id, first.plan_hash or "")
        again = await wait_for_stage(api, handle, "gate:approve_plan")
        while again.plan_hash == first.plan_hash:
            again = await wait_for_stage(api, handle, "gate:approve_plan")
        assert not {c for c in world.calls} & {s.name for s in APPLY}, "nothing applied on a changed plan"
        assert "+ adopt kube Namespace tenant-x" in again.gates[0].description
        rows = Counter(record.name for record in again.steps)
        assert [name for name, count in rows.items() if count > 1] == [], "a re-plan's rows replace the first's"
        assert {step.name for step in PLAN} <= set(rows)
        with pytest.raises(WorkflowUpdateFailedError):
            await api.approve(handle.id, first.plan_hash or "")
        await api.approve(handle.id, again.plan_hash or "")
        result = await handle.result()
    assert result.status == "completed" and result.plan_hash == again.plan_hash
    assert result.plan is not None and "tenant-x" in {p.name for p in result.plan.steps}


async def test_offboarding_reads_again_before_removing_anything(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_offboarding(example_tenant(f"tenant-p{uuid.uuid4().hex[:8]}"))
        first = await wait_for_stage(api, handle, "gate:approve_plan")
        world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.unchanged)]
        await api.approve(handle.id, first.plan_hash or "")
        again = await wait_for_stage(api, handle, "gate:approve_plan")
        while again.plan_hash == first.plan_hash:
            again = await wait_for_stage(api, handle, "gate:approve_plan")
        assert not [c for c in world.calls if ".undo:" in c], "nothing removed on a changed plan"
        assert "+ delete kube Namespace tenant-x" in again.gates[0].description
        await api.approve(handle.id, again.plan_hash or "")
        result = await handle.result()
    assert result.status == "completed"
    assert "tenant-x" in {r.name for r in result.removed}


async def test_the_replan_refuses_at_preflight_what_appeared_while_the_gate_waited(
    dev_env: WorkflowEnvironment,
) -> None:
    """Issue 26, item 2: the re-plan after approval is a full plan. A username someone else created meanwhile (another
    email, no tenantflow marker) is a preflight refusal with its fix, never an approvable ``adopt`` line."""
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-p{uuid.uuid4().hex[:8]}"))
        first = await wait_for_stage(api, handle, "gate:approve_plan")
        world.appeared = [PlanStep(layer="identity", kind="User", name="zara", action=Action.adopt)]
        taken = "username zara is already an Authentik account (active, pk 9, in no tenant)"
        fix = "set adopt_existing: true for zara in the contract if that account is this person's"
        world.refusals = [Finding.failed("identity.username", taken, fix)]
        await api.approve(handle.id, first.plan_hash or "")
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        status = await api.status(handle.id)
    assert "preflight failed, nothing was written" in str(failed.value.cause) and fix in str(failed.value.cause)
    assert status.stage == "preflight-failed" and status.plan_hash == first.plan_hash, "no plan with zara published"
    assert not {c for c in world.calls} & {s.name for s in APPLY}, "nothing applied"
    assert [c for c in world.calls if c == "identity.preflight"] == ["identity.preflight"] * 2
