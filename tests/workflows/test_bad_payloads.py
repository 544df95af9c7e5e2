"""Malformed update, signal and start payloads on the real dev server: refused naming the field, nothing run."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.onboarding import OnboardingResult
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

REFUSED_UPDATES: list[tuple[str, list[Any], list[str]]] = [
    (
        "approve_plan",
        [{"plan_hash": 42, "approver": ["x"]}],
        [
            "ApprovePlan: 2 problem(s)",
            "plan_hash: Input should be a valid string",
            "approver: Input should be a valid string",
        ],
    ),
    (
        "approve_plan",
        [{"plan_hash": "0123456789abcdef", "sneaky": True}],
        ["sneaky: unknown field; remove it or check the spelling"],
    ),
    ("approve_plan", [{"plan_hash": "ab" * 5000}], ["plan_hash: String should match pattern", "(10002 chars)"]),
    ("reject_plan", [{"approver": "ops"}], ["RejectPlan", "reason: Field required"]),
    ("answer_gate", ["resume_submissions", {"approver": "x; rm -rf /"}], ["approver: String should match pattern"]),
]


async def test_malformed_updates_are_refused_by_field_and_the_gate_stays_open(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-p{uuid.uuid4().hex[:8]}"))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        for update, args, expected in REFUSED_UPDATES:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(update, args=args)
            message = str(refused.value.cause)
            assert all(part in message for part in expected), (update, message)
        await handle.signal("approve_plan_signal", {"plan_hash": status.plan_hash, "approver": 7})
        assert (await api.status(handle.id)).stage == "gate:approve_plan"
        assert not [c for c in world.calls if not c.endswith((".preflight", ".plan"))]
        await api.approve(handle.id, status.plan_hash or "")
        result: OnboardingResult = await handle.result()
    assert result.status == "completed"


async def test_a_malformed_start_input_fails_the_run_naming_the_field(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        handle = await dev_env.client.start_workflow(
            "TenantOnboarding",
            {"contract": {"slug": "Bad Slug!"}, "approval_escalate_after_s": "soon"},
            id=f"tenant/raw-{uuid.uuid4().hex[:8]}",
            task_queue=api.task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    message = str(failure.value.cause)
    assert "OnboardingInput" in message and "contract.slug" in message and "approval_escalate_after_s" in message
    assert world.calls == []
