"""What ``status`` lists (issue 27's rough edges): one row per step, a re-plan's rows replacing the first plan's,
and a step whose check found an error shown ``failed``, never ``done``."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.runbook import CAPACITY_PREFLIGHT, PLAN
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def test_a_replan_replaces_the_rows_of_the_first_plan(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-r{uuid.uuid4().hex[:8]}"))
        first = await wait_for_stage(api, handle, "gate:approve_plan")
        world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.adopt)]
        await api.approve(handle.id, first.plan_hash or "")
        again = await wait_for_stage(api, handle, "gate:approve_plan")
        while again.plan_hash == first.plan_hash:
            again = await wait_for_stage(api, handle, "gate:approve_plan")
        await handle.cancel()
    rows = Counter(record.name for record in again.steps)
    assert [name for name, count in rows.items() if count > 1] == [], again.steps
    assert {step.name for step in PLAN} <= set(rows)


async def test_a_step_whose_check_found_an_error_is_failed_not_done(dev_env: WorkflowEnvironment) -> None:
    async with fake_worker(dev_env, FakeWorld(preflight_error="only 1 free node")) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-r{uuid.uuid4().hex[:8]}"))
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await api.status(handle.id)
    states = {record.name: record.state for record in status.steps}
    assert states[CAPACITY_PREFLIGHT.name] == "failed", status.steps
    assert [state for name, state in states.items() if name != CAPACITY_PREFLIGHT.name] == ["done"] * (
        len(states) - 1
    ), status.steps
