"""``tenantflow drift``: the drift check run by the worker, and the Temporal Schedule that runs it nightly.

:func:`check_on_worker` runs the read-only ``TenantDrift`` workflow (:mod:`workflows.drift`) on the worker's task
queue, where the services' credentials are, and waits for its report: the CLI and the HTTP API need only Temporal
access. Nothing is written. :func:`check_tenant` calls one tenant's ``drift.tenant`` activity in this process
(through ``temporalio.testing.ActivityEnvironment``, with the tenant's onboarding workflow id): only the bench's
measure of one check uses it.

The schedule (id :data:`models.drift.DRIFT_SCHEDULE_ID`) starts ``TenantDrift`` on the worker's task queue
(Temporal Schedules: https://docs.temporal.io/schedule, ``Client.create_schedule``); creating it again updates
its spec and action, so ``--schedule`` is idempotent. Overlapping runs are skipped.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta

from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.drift import steps as drift
from tenantflow.models.drift import (
    DRIFT_SCHEDULE_ID,
    DRIFT_WORKFLOW,
    NIGHTLY,
    DriftReport,
    DriftTarget,
    FleetDriftInput,
    FleetDriftReport,
)
from tenantflow.models.run_ids import drift_check_id, onboarding_id
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.drift import TenantDrift

CHECK_TIMEOUT = timedelta(minutes=15)
"""How long an on-demand check may take, a worker's pickup included: without a worker on the task queue it ends."""


def _environment(workflow_id: str) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=workflow_id, workflow_type=DRIFT_WORKFLOW)
    return env


def check_tenant(target: DriftTarget) -> DriftReport:
    """``drift.tenant`` of one tenant, as its onboarding workflow would see the world."""
    report: DriftReport = _environment(onboarding_id(target.slug)).run(drift.tenant, target)
    return report


async def check_on_worker(api: TenantflowClient, params: FleetDriftInput) -> FleetDriftReport:
    """The drift of every tenant ``params`` selects, checked by the worker (a ``TenantDrift`` run of its own)."""
    return await api.client.execute_workflow(
        TenantDrift.run,
        params,
        id=drift_check_id(uuid.uuid4().hex[:12]),
        task_queue=api.task_queue,
        execution_timeout=CHECK_TIMEOUT,
        static_summary=f"read-only drift check of {', '.join(params.slugs) or 'every onboarded tenant'}",
    )


def nightly_schedule(api: TenantflowClient, params: FleetDriftInput, cron: str) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(TenantDrift.run, params, id="drift", task_queue=api.task_queue),
        spec=ScheduleSpec(cron_expressions=[cron]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def ensure_schedule(api: TenantflowClient, params: FleetDriftInput, cron: str = NIGHTLY) -> str:
    """Create the drift schedule, or update it to this spec and action; 'created' or 'updated'."""
    schedule = nightly_schedule(api, params, cron)
    try:
        await api.client.create_schedule(DRIFT_SCHEDULE_ID, schedule)
    except ScheduleAlreadyRunningError:

        def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await api.client.get_schedule_handle(DRIFT_SCHEDULE_ID).update(replace)
        return "updated"
    return "created"
