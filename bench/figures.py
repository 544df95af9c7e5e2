"""The five benchmark figures of issue 7, measured against a Temporal server.

(a) one onboarding end to end with auto-approval: wall time, and with a lab the
    API calls each HTTP stand-in saw (its request journal);
(b) N concurrent onboardings of distinct tenants on one worker: throughput,
    p50/p95 time-to-complete, failures (simulated activities: see README);
(c) the durability tax: the same onboarding through Temporal versus the same
    activity functions called directly in one process, as a ratio;
(d) history events per onboarding;
(e) gate latency: from the ``approve_plan`` update to the next activity start, p50.
"""

from __future__ import annotations

import asyncio
import functools
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import BaseModel
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from activities.settings import settings as service_settings
from bench.fakes import as_activities, simulated_activities
from lab.endpoints import LabEndpoints
from models.onboarding import StepInput
from models.tenant import TenantContract
from starter.client import TenantflowClient
from worker.config import WorkerSettings
from worker.registry import ACTIVITIES
from worker.run import run_worker
from workflows.onboarding import APPLY_STEPS, PLAN_LAYERS, PREFLIGHT_LAYERS, SMOKE_STEPS, TenantOnboarding


class RunTiming(BaseModel):
    workflow_id: str
    seconds: float
    ok: bool
    events: int = 0
    gate_latency_s: float | None = None


class Figures(BaseModel):
    mode: str
    one_run_s: float
    api_calls: dict[str, int] = {}
    concurrent: int
    throughput_per_s: float
    p50_s: float
    p95_s: float
    failures: int
    direct_s: float
    durability_tax: float
    history_events: int
    gate_latency_p50_ms: float


def gate_latency(history: WorkflowHistory) -> float | None:
    """Seconds from the accepted ``approve_plan`` update to the next activity start."""
    accepted = None
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = event.event_time.ToDatetime()
        elif accepted is not None and event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            return (event.event_time.ToDatetime() - accepted).total_seconds()
    return None


async def onboard_once(api: TenantflowClient, contract: TenantContract) -> RunTiming:
    """Start, approve the plan as soon as it is published, wait for the end; time it and read its history."""
    started = time.perf_counter()
    handle = await api.start_onboarding(contract)
    ok = True
    try:
        status = await api.wait_for_plan(handle.id, timeout_s=600)
        assert status.plan_hash is not None
        await api.approve(handle.id, status.plan_hash, approver="bench")
        ok = (await api.result(handle.id)).status == "completed"
    except Exception:
        ok = False
    seconds = time.perf_counter() - started
    history = await handle.fetch_history()
    return RunTiming(workflow_id=handle.id, seconds=seconds, ok=ok, events=len(history.events),
                     gate_latency_s=gate_latency(history))


async def direct_once(functions: dict[str, Callable[..., Any]], contract: TenantContract) -> float:
    """The same onboarding as plain calls of the activity functions, in order, in one process."""
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def simulated_figures(client: Client, template: TenantContract, tenants: int = 100,
                            latency_s: float = 0.01, max_activities: int = 200) -> Figures:
    """All five figures against simulated activities on one worker (this process)."""
    functions = simulated_activities(latency_s)
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    run_tag = uuid.uuid4().hex[:4]
    async with Worker(client, task_queue=queue, workflows=[TenantOnboarding], activities=as_activities(functions),
                      max_concurrent_activities=max_activities, max_concurrent_workflow_tasks=100):
        api = TenantflowClient(client, queue)
        single = await onboard_once(api, template.model_copy(update={"slug": f"tenant-b{run_tag}-solo"}))
        direct = await direct_once(functions, template)
        started = time.perf_counter()
        runs = await asyncio.gather(*(onboard_once(api, template.model_copy(
            update={"slug": f"tenant-b{run_tag}-{i:04d}"})) for i in range(tenants)))
        elapsed = time.perf_counter() - started
    done = [r.seconds for r in runs if r.ok]
    latencies = [r.gate_latency_s for r in runs if r.gate_latency_s is not None]
    return Figures(mode=f"simulated activities ({latency_s * 1000:.0f} ms each)", one_run_s=single.seconds,
                   concurrent=tenants, throughput_per_s=len(done) / elapsed, p50_s=percentile(done, 0.5),
                   p95_s=percentile(done, 0.95), failures=sum(1 for r in runs if not r.ok), direct_s=direct,
                   durability_tax=single.seconds / direct if direct else 0.0, history_events=single.events,
                   gate_latency_p50_ms=1000 * statistics.median(latencies) if latencies else 0.0)


def journal_counts(lab: LabEndpoints) -> dict[str, int]:
    """Requests each HTTP stand-in of the lab has journalled (API calls), by stand-in."""
    urls = {f"kube-{context}": url for context, url in lab.kube_urls.items()}
    urls |= {"authentik": lab.authentik_url, "weka": lab.weka_url}
    counts = {}
    for name, url in urls.items():
        with httpx.Client(base_url=url, verify=False, timeout=10) as http:
            counts[name] = len(http.get("/_lab/requests").json()["requests"])
    return counts


def lab_functions() -> dict[str, Callable[..., Any]]:
    """The real activity functions by name, each run inside an activity context (heartbeats allowed)."""
    env = ActivityEnvironment()
    return {activity_name(fn): functools.partial(env.run, fn) for fn in ACTIVITIES}


def activity_name(fn: Callable[..., Any]) -> str:
    definition = activity._Definition.must_from_callable(fn)
    return str(definition.name)


async def lab_figures(client: Client, lab: LabEndpoints, template: TenantContract) -> tuple[RunTiming, dict[str, int],
                                                                                              float]:
    """(a) and (c) against the lab: one real onboarding through a real worker, then the same work called directly.

    The direct run onboards a second tenant (slug ``<slug>-direct``) so both find the same empty world.
    """
    os.environ.update(lab.to_env())
    service_settings.cache_clear()
    settings = WorkerSettings(TEMPORAL_ADDRESS=client.service_client.config.target_host,
                              TENANTFLOW_TASK_QUEUE=f"bench-lab-{uuid.uuid4().hex[:6]}")
    before = journal_counts(lab)
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop, client=client))
    try:
        timing = await onboard_once(TenantflowClient(client, settings.task_queue), template)
    finally:
        stop.set()
        await worker
    after = journal_counts(lab)
    calls = {name: after[name] - before.get(name, 0) for name in after}
    direct = await direct_once(lab_functions(), template.model_copy(update={"slug": f"{template.slug}-direct"}))
    return timing, calls, direct
