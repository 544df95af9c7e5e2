"""The floor calls what an onboarding called, in its order and the same way: a step the onboarding ran as a local
activity is a local activity in the floor too, so the floor's history has the same events per step."""

from __future__ import annotations

import uuid

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.bench.floor import floor_names
from tenantflow.bench.floorworker import FLOOR_WORKFLOW, BenchFloor, noop_activity
from tenantflow.bench.history import ActivitySpan, activity_spans

ONBOARDING = [
    ActivitySpan(name="capacity.preflight", started=1.0, ended=2.0, local=True),
    ActivitySpan(name="kube.plan", started=1.0, ended=2.0, local=True),
    ActivitySpan(name="kube.namespace", started=2.0, ended=3.0),
    ActivitySpan(name="handover.render", started=3.0, ended=4.0, local=True),
    ActivitySpan(name="records.tenant", started=4.0, ended=5.0),
]


async def test_the_floor_calls_local_steps_as_local_activities_in_the_onboardings_order(
    dev_env: WorkflowEnvironment,
) -> None:
    names = floor_names(ONBOARDING)
    assert names == [
        "local:capacity.preflight",
        "local:kube.plan",
        "kube.namespace",
        "local:handover.render",
        "records.tenant",
    ]
    queue = f"floor-{uuid.uuid4().hex[:8]}"
    activities = [noop_activity(span.name) for span in ONBOARDING]
    async with Worker(dev_env.client, task_queue=queue, workflows=[BenchFloor], activities=activities):
        handle = await dev_env.client.start_workflow(FLOOR_WORKFLOW, names, id=queue, task_queue=queue)
        assert await handle.result() == len(names)
        floor = activity_spans((await handle.fetch_history()).events)
    assert floor_names(floor) == names
