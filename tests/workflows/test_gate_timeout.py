"""Gate escalation and expiry under the time-skipping test server."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker


async def test_unanswered_plan_gate_escalates_then_expires(ts_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    async with fake_worker(ts_env, world) as api:
        handle = await api.start_onboarding(
            example_tenant(), approval_escalate_after_s=3600, approval_expire_after_s=3 * 24 * 3600
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        history = await handle.fetch_history()
    assert "gate approve_plan expired" in str(failure.value.cause)
    stages = [
        e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields["Stage"].data
        for e in history.events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
        and "Stage" in e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    ]
    assert b'"gate:approve_plan-escalated"' in stages
    assert not [c for c in world.calls if not c.endswith((".preflight", ".plan"))]
