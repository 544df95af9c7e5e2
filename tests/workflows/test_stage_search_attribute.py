"""``Stage`` is upserted once per phase, not once per step, while every step stays visible in ``status`` and in its
activity's summary; ``TenantSlug``, set at start, is not upserted again (issue 15: each upsert is a history event
and a visibility write)."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.converter import PayloadConverter
from temporalio.testing import WorkflowEnvironment

from tenantflow.bench.history import stage_set
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.runbook import APPLY, SMOKE
from tenantflow.workflows.search import TENANT_SLUG
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

PHASES = [
    "preflight",
    "planning",
    "gate:approve_plan",
    "replan-preflight",  # the re-plan after approval is a full plan (issue 26, item 2)
    "planning",
    "apply",
    "smoke",
    "validate",
    "handover",
]


async def test_stage_changes_once_per_phase_and_steps_stay_visible(dev_env: WorkflowEnvironment) -> None:
    async with fake_worker(dev_env, FakeWorld()) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-s{uuid.uuid4().hex[:8]}"))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        result: OnboardingResult = await handle.result()
        final = await api.status(handle.id)
        events = (await handle.fetch_history()).events
    assert result.status == "completed"
    stages = [s for s in map(stage_set, events) if s is not None]
    assert stages == [*PHASES, "record", "term", "completed"]
    upserted = [e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields for e in events]
    assert not [fields for fields in upserted if "TenantSlug" in fields]  # the starter set it at start
    assert (await handle.describe()).typed_search_attributes.get(TENANT_SLUG) == result.slug
    done = {s.name for s in final.steps if s.state == "done"}
    assert {s.name for s in (*APPLY, *SMOKE)} <= done
    decode = PayloadConverter.default.from_payload
    summaries = [
        decode(e.user_metadata.summary, str)
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    for step in (*APPLY, *SMOKE):
        assert any(s.startswith(f"{step.name} [") for s in summaries), step.name
