"""``TenantPlan``: the catalogue's preflight, then (only without a preflight error) every layer's plan, each phase's
reads at once as local activities, and nothing else: no write step (issue 27: plans run on the worker).

The fake reads of a phase wait for each other at a barrier, so the run completes only if it started them at once.
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tenantflow.models import runbook
from tenantflow.models.preview import PlanInput, PlanReport
from tenantflow.models.run_ids import plan_id
from tenantflow.workflows.plan import TenantPlan
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import NODES, FakeWorld
from tests.workflows.harness import fake_worker


async def planned(env: WorkflowEnvironment, world: FakeWorld) -> tuple[PlanReport, set[EventType.ValueType]]:
    """The report of one plan of the example tenant on ``world``, and the kinds of event its history holds."""
    contract = example_tenant("tenant-plan")
    async with fake_worker(env, world) as api:
        handle = await env.client.start_workflow(
            TenantPlan.run,
            PlanInput(contract=contract),
            id=plan_id(contract.slug, uuid.uuid4().hex),
            task_queue=api.task_queue,
        )
        report = await handle.result()
        events = {event.event_type for event in (await handle.fetch_history()).events}
    return report, events


async def test_a_plan_reads_every_layer_a_phase_at_once_and_writes_nothing(dev_env: WorkflowEnvironment) -> None:
    preflights, plans = asyncio.Barrier(len(runbook.PREFLIGHT) - 1), asyncio.Barrier(len(runbook.PLAN))
    world = FakeWorld(
        rendezvous={s.name: preflights for s in runbook.PREFLIGHT[1:]} | {s.name: plans for s in runbook.PLAN}
    )
    report, events = await planned(dev_env, world)
    assert report.plan is not None and not report.errors and report.nodes == NODES
    assert {s.layer for s in report.plan.steps} <= {s.layer for s in runbook.PLAN}
    assert sorted(world.calls) == sorted(s.name for s in (*runbook.PREFLIGHT, *runbook.PLAN))
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in events  # every read is a local activity


async def test_a_preflight_error_stops_the_plan_before_any_plan_step(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(preflight_error="64 GPUs wanted, 8 free")
    report, _ = await planned(dev_env, world)
    assert report.plan is None
    assert [(f.check, f.message) for f in report.errors] == [("capacity.nodes", "64 GPUs wanted, 8 free")]
    assert sorted(world.calls) == sorted(s.name for s in runbook.PREFLIGHT)
