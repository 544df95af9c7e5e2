"""``tenantflow drift``: the drift check run in-process, and the Temporal Schedule that runs it nightly.

In-process, the ``drift.tenants`` and ``drift.tenant`` activities (:mod:`activities.drift.steps`), the ones the
``TenantDrift`` workflow runs, are called through ``temporalio.testing.ActivityEnvironment``, with the tenant's
onboarding workflow id (the identity layer's ownership check reads it), at most ``concurrency`` tenants at a time.
Nothing is written.

The schedule (id :data:`models.drift.DRIFT_SCHEDULE_ID`) starts ``TenantDrift`` on the worker's task queue
(Temporal Schedules: https://docs.temporal.io/schedule, ``Client.create_schedule``); creating it again updates
its spec and action, so ``--schedule`` is idempotent. Overlapping runs are skipped.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

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

from tenantflow.activities.common.settings import settings as service_settings
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
from tenantflow.models.run_ids import onboarding_id
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import load_env_file
from tenantflow.workflows.drift import TenantDrift


def use_configured_services() -> None:
    """Load ``TENANTFLOW_ENV_FILE`` (without overriding the environment) and re-read service settings."""
    load_env_file(WorkerSettings())
    service_settings.cache_clear()


def _environment(workflow_id: str) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=workflow_id, workflow_type=DRIFT_WORKFLOW)
    return env


def check_tenant(target: DriftTarget) -> DriftReport:
    """``drift.tenant`` of one tenant, as its onboarding workflow would see the world."""
    report: DriftReport = _environment(onboarding_id(target.slug)).run(drift.tenant, target)
    return report


def check_fleet(params: FleetDriftInput) -> FleetDriftReport:
    """Every tenant ``params`` selects, checked ``params.concurrency`` at a time."""
    slugs: list[str] = _environment("drift").run(drift.tenants, params)
    targets = [DriftTarget(records=params.records, slug=slug) for slug in slugs]
    with ThreadPoolExecutor(max_workers=params.concurrency) as pool:
        reports = list(pool.map(check_tenant, targets))
    return FleetDriftReport(checked_at=datetime.now(UTC), tenants=reports)


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
