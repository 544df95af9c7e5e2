"""Figures (a), (c) and (d) against a running lab with the real activities, leaving the lab as it was.

Two bench tenants with fresh slugs and user names (``tenant-b<tag>``,
``alice-b<tag>``): the first is onboarded through Temporal by a real worker
(every workflow and activity, the production worker set-up) and offboarded; the
second gets the same activity functions called directly, in order, in this
process, and is offboarded through the worker too. Offboarding purges the data;
only the deactivated Authentik users the runbook keeps remain.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio import activity
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.settings import settings as service_settings
from bench.apicalls import calls_per_layer, journals
from bench.history import activity_spans
from bench.runs import RunTiming, offboard, onboard_once
from lab.endpoints import LabEndpoints
from models.onboarding import StepInput
from models.tenant import TenantContract
from starter.client import TenantflowClient
from worker import logging as worker_logging
from worker.config import WorkerSettings
from worker.registry import ACTIVITIES
from worker.run import run_worker
from workflows.onboarding import APPLY_STEPS, PLAN_LAYERS, PREFLIGHT_LAYERS, SMOKE_STEPS


class LabFigures(BaseModel):
    run: RunTiming
    api_calls: dict[str, dict[str, int]]
    history_events: int
    activity_seconds: dict[str, float]
    """How long each activity took against the lab: the latencies the simulated activities reuse."""
    direct_s: float
    tenants: list[str]
    cleaned_up: bool


def bench_tenant(template: TenantContract, tag: str) -> TenantContract:
    """``template`` renamed to ``tenant-<tag>`` with users ``<name>-<tag>`` so runs never collide."""
    slug = f"tenant-{tag}"
    users = [u.model_copy(update={"username": f"{u.username}-{tag}", "email": f"{u.username}-{tag}@example.org"})
             for u in template.users]
    login = template.login.model_copy(update={"hostname": f"login.{slug}.example.internal"})
    slurm = template.slurm.model_copy(update={"team_account": f"ml-team-{tag}" if template.slurm.team_account
                                              else None})
    return template.model_copy(update={"slug": slug, "display_name": f"Bench {tag}", "users": users,
                                       "login": login, "slurm": slurm})


def log_to(path: Path) -> None:
    """This process's log lines (JSON, as the worker writes them in production) go to ``path``, not the output."""
    worker_logging.configure("json")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(path.open("a"))


@asynccontextmanager
async def lab_worker(client: Client, lab: LabEndpoints, log: Path) -> AsyncIterator[TenantflowClient]:
    """The production worker (``worker.run.run_worker``) pointed at the lab, on a private task queue."""
    log_to(log)
    os.environ.update(lab.to_env())
    service_settings.cache_clear()
    settings = WorkerSettings(TENANTFLOW_TASK_QUEUE=f"bench-lab-{uuid.uuid4().hex[:6]}")
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop, client=client))
    try:
        yield TenantflowClient(client, settings.task_queue)
    finally:
        stop.set()
        await worker


def activity_name(fn: Callable[..., Any]) -> str:
    definition = activity._Definition.must_from_callable(fn)
    return str(definition.name)


def lab_functions() -> dict[str, Callable[..., Any]]:
    """The real activity functions by name, each run inside an activity context (heartbeats allowed)."""
    env = ActivityEnvironment()
    return {activity_name(fn): functools.partial(env.run, fn) for fn in ACTIVITIES}


async def direct_once(functions: dict[str, Callable[..., Any]], contract: TenantContract) -> float:
    """The onboarding's activities as plain calls, in the workflow's order, in this process; seconds taken."""
    async def call(name: str, arg: StepInput) -> Any:
        result = functions[name](arg)
        return await result if asyncio.iscoroutine(result) else result

    started = time.perf_counter()
    step = StepInput(contract=contract, run_id=f"direct/{contract.slug}")
    for layer in PREFLIGHT_LAYERS:
        outcome = await call(f"{layer}.preflight", step)
        if layer == "capacity":
            step = step.model_copy(update={"facts": outcome.facts})
    for layer in PLAN_LAYERS:
        await call(f"{layer}.plan", step)
    for layer, name, _ in (*APPLY_STEPS, *SMOKE_STEPS):
        step = step.model_copy(update={"facts": (await call(f"{layer}.{name}", step)).facts})
    await call("validate.all", step)
    await call("handover.render", step)
    return time.perf_counter() - started


async def lab_figures(client: Client, lab: LabEndpoints, template: TenantContract, log: Path) -> LabFigures:
    """One onboarding through Temporal and one direct, each offboarded afterwards; worker logs go to ``log``."""
    tag = f"b{uuid.uuid4().hex[:5]}"
    durable, direct = bench_tenant(template, tag), bench_tenant(template, f"{tag}d")
    async with lab_worker(client, lab, log) as api:
        since = time.time()
        try:
            run = await onboard_once(api, durable)
        finally:
            cleaned = (await offboard(api, durable)).status == "completed"
        history = await api.handle(run.workflow_id).fetch_history()
        spans = activity_spans(history.events)
        calls = calls_per_layer(journals(lab), spans, since, spans[-1].ended if spans else time.time(),
                                service_settings().slurm_namespace)
        try:
            direct_s = await direct_once(lab_functions(), direct)
        finally:
            cleaned = (await offboard(api, direct)).status == "completed" and cleaned
    return LabFigures(run=run, api_calls=calls, history_events=len(history.events),
                      activity_seconds={s.name: round(s.seconds, 3) for s in spans}, direct_s=direct_s,
                      tenants=[durable.slug, direct.slug], cleaned_up=cleaned)
