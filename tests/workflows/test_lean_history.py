"""Onboarding's read-only steps run as local activities, a phase's at once, each retried on its own by its retry
policy and listed in ``status``; write and smoke steps stay activities in runbook order; the run writes one patch
marker, one for the gate notifications (issue 27) and one for the tenant's hold; its history replays (issue 15:
history events per onboarding).

The fake read-only steps of a phase wait for each other at a barrier, so the run completes only if the workflow
started them at once. Runs recorded before ``onboarding-lean-history`` (every step an activity, a marker per patch)
replay unchanged in tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tenantflow.bench.history import local_activity
from tenantflow.models import runbook
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.status import RunStatus
from tenantflow.worker.codec import PLAIN
from tenantflow.worker.registry import WORKFLOWS
from tenantflow.workflows.gate_waits import GATE_NOTIFY_PATCH
from tenantflow.workflows.onboarding import LEAN_HISTORY_PATCH
from tenantflow.workflows.tenant_hold import HOLD_PATCH
from tenantflow.workflows.tenant_run import REPLAN_PREFLIGHT_PATCH
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding, fake_worker

CHANGE_VERSION = SearchAttributeKey.for_keyword_list("TemporalChangeVersion")
PHASES = [
    [runbook.CAPACITY.preflight],
    runbook.PREFLIGHT[1:],
    runbook.PLAN,
    [runbook.CAPACITY.preflight],
    runbook.PREFLIGHT[1:],
    runbook.PLAN,
    [runbook.HANDOVER],
]
"""The read-only steps by phase: the capacity preflight (it chooses the nodes), the other preflights, the plan, the
re-plan after approval (a full plan, preflights included: issue 26, item 2), the handover render."""
LOCAL_STEPS = [step for phase in PHASES for step in phase]
ACTIVITY_STEPS = [*runbook.APPLY, *runbook.SMOKE, runbook.VALIDATE, runbook.RECORD_TENANT]


def scheduled(events: list[HistoryEvent]) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def local_steps(events: list[HistoryEvent]) -> list[tuple[str, int]]:
    return [step for step in map(local_activity, events) if step is not None]


async def onboard(
    world: FakeWorld, env: WorkflowEnvironment
) -> tuple[OnboardingResult, RunStatus, WorkflowHandle[Any, Any]]:
    async with fake_worker(env, world) as api:
        handle = await approved_onboarding(api, example_tenant(f"tenant-l{uuid.uuid4().hex[:8]}"))
        result: OnboardingResult = await handle.result()
        return result, await api.status(handle.id), handle


async def test_read_only_steps_of_a_phase_run_at_once_as_local_activities(dev_env: WorkflowEnvironment) -> None:
    preflights, plans = asyncio.Barrier(len(runbook.PREFLIGHT) - 1), asyncio.Barrier(len(runbook.PLAN))
    world = FakeWorld(
        rendezvous={s.name: preflights for s in runbook.PREFLIGHT[1:]} | {s.name: plans for s in runbook.PLAN},
    )
    result, status, handle = await onboard(world, dev_env)
    history = await handle.fetch_history()
    assert result.status == "completed", result.message
    recorded = local_steps(history.events)  # a phase's markers in the order its steps finished
    notified = [step for step in recorded if step[0] == runbook.GATE_NOTIFY.name]
    recorded = [step for step in recorded if step[0] != runbook.GATE_NOTIFY.name]
    bounds = [0, 1, 5, 11, 12, 16, 22, len(recorded)]
    phases = [recorded[start:end] for start, end in itertools.pairwise(bounds)]
    assert [sorted(phase) for phase in phases] == [sorted((s.name, 1) for s in phase) for phase in PHASES], recorded
    assert scheduled(history.events) == [s.name for s in ACTIVITY_STEPS]  # writes in runbook order, as before
    assert [(n.gate, n.event) for n in world.gate_notices] == [("approve_plan", "opened")]
    assert notified == [(runbook.GATE_NOTIFY.name, 1)]  # a local activity: a marker, no scheduled activity
    read = [runbook.CAPACITY.preflight, *runbook.PREFLIGHT[1:], *runbook.PLAN]  # the re-plan's rows replace the plan's
    ran = [*read, *runbook.APPLY, *runbook.SMOKE, runbook.VALIDATE, runbook.HANDOVER, runbook.RECORD_TENANT]
    assert [s.name for s in status.steps] == [s.name for s in ran]  # every step listed once, local or not
    assert {s.state for s in status.steps} == {"done"}
    patches = [GATE_NOTIFY_PATCH, LEAN_HISTORY_PATCH, REPLAN_PREFLIGHT_PATCH, HOLD_PATCH]
    assert (await handle.describe()).typed_search_attributes.get(CHANGE_VERSION) == patches
    await Replayer(workflows=WORKFLOWS, data_converter=PLAIN).replay_workflow(history)


async def test_a_read_only_step_that_fails_is_retried_on_its_own(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(flaky={"identity.plan": 1, "slurm.preflight": 2})
    result, status, handle = await onboard(world, dev_env)
    assert result.status == "completed", result.message
    attempts = local_steps((await handle.fetch_history()).events)
    assert ("slurm.preflight", 3) in attempts and ("identity.plan", 2) in attempts
    assert world.calls.count("slurm.preflight") == 4 and world.calls.count("identity.plan") == 3  # + the re-plan
    assert world.calls.count("kube.plan") == 2 and world.calls.count("capacity.preflight") == 2
    assert [s.state for s in status.steps if s.name == "identity.plan"] == ["done"]  # one row per step
