"""``TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S``: the worker lowers the heartbeat timeout the server records for each
scheduled activity to the bound; unset, the workflow's own timeout (the step catalogue's minute) is scheduled."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import interceptors


@activity.defn(name="cap.probe")
async def probe() -> str:
    return "done"


@workflow.defn(name="HeartbeatCapProbe", sandboxed=False)
class Probe:
    """Three activities: a heartbeat timeout under the bound, one over it, none. Unsandboxed, as this module imports
    pytest; the chaos tests run the sandboxed product workflows under the bound."""

    @workflow.run
    async def run(self) -> str:
        short = await workflow.execute_activity(
            "cap.probe", start_to_close_timeout=timedelta(minutes=5), heartbeat_timeout=timedelta(seconds=5)
        )
        long: str = await workflow.execute_activity(
            "cap.probe", start_to_close_timeout=timedelta(minutes=5), heartbeat_timeout=timedelta(seconds=60)
        )
        unbounded: str = await workflow.execute_activity("cap.probe", start_to_close_timeout=timedelta(minutes=5))
        return f"{short} {long} {unbounded}"


async def scheduled_heartbeats(env: WorkflowEnvironment, settings: WorkerSettings) -> list[float]:
    """Run the probe on a worker with ``settings``' interceptors; the heartbeat timeouts the server recorded."""
    queue = f"cap-{uuid.uuid4().hex[:8]}"
    async with Worker(
        env.client, task_queue=queue, workflows=[Probe], activities=[probe], interceptors=interceptors(settings)
    ):
        handle = await env.client.start_workflow(Probe.run, id=queue, task_queue=queue)
        assert await handle.result() == "done done done"
    return [
        event.activity_task_scheduled_event_attributes.heartbeat_timeout.ToTimedelta().total_seconds()
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


@pytest.mark.parametrize(("cap", "recorded"), [(None, [5.0, 60.0, 0.0]), ("20", [5.0, 20.0, 0.0])])
async def test_the_bound_lowers_only_longer_heartbeat_timeouts(
    dev_env: WorkflowEnvironment, cap: str | None, recorded: list[float]
) -> None:
    settings = WorkerSettings.model_validate({} if cap is None else {"TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S": cap})
    assert await scheduled_heartbeats(dev_env, settings) == recorded
