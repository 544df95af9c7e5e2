"""Figures (a), (c), (d) and the lab part of (f) against a running lab with the real activities, leaving the lab
as it was.

Every bench tenant has a fresh slug and user names (``tenant-b<tag>``,
``alice-b<tag>``). Half are onboarded through Temporal by a real worker (every
workflow and activity, the production worker set-up), half get the same activity
functions called directly, in the workflow's order, in this process; the two kinds
alternate A-B-B-A so neither profits from warm caches or drift. Each tenant is
offboarded through the worker right after its run, data purged: only the
deactivated Authentik users the runbook keeps remain.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.settings import settings as service_settings
from tenantflow.bench.apicalls import calls_per_layer, journals
from tenantflow.bench.drift import LabDrift, lab_drift
from tenantflow.bench.history import ActivitySpan, activity_spans
from tenantflow.bench.noise import RatioInterval, ratio_interval
from tenantflow.bench.runs import APPROVER, REQUESTER, RunTiming, offboard, onboard_once
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import StepInput
from tenantflow.models.runbook import APPLY, CAPACITY, HANDOVER, PLAN, PREFLIGHT, SMOKE, VALIDATE
from tenantflow.models.status import RunOutcome
from tenantflow.models.step import Step
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.approvers import OperatorClients, StandInOperators
from tenantflow.worker import logs
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.registry import BY_NAME
from tenantflow.worker.run import run_worker
from tenantflow.workflows.steps import STEP_RETRY

R = TypeVar("R")


class LabFigures(BaseModel):
    run: RunTiming
    api_calls: dict[str, dict[str, int]]
    history_events: int
    activity_seconds: dict[str, float]
    """How long each activity took against the lab: the latencies the simulated activities reuse."""
    durable_s: list[float]
    durable_activity_s: list[float]
    """Time spent inside activities of each run through Temporal; the rest is orchestration."""
    direct_s: list[float]
    direct_activity_seconds: list[dict[str, float]]
    failures: list[str]
    """Runs (through Temporal or direct) that did not complete: no durability tax then."""
    tenants: list[str]
    cleaned_up: bool
    drift: LabDrift | None = None
    """Figure (f): the first tenant onboarded through Temporal, checked for drift before it is offboarded."""

    @property
    def durability_tax(self) -> float | None:
        """Total time through Temporal over total time direct, over every pair; None if a run failed."""
        return None if self.failures else sum(self.durable_s) / sum(self.direct_s)

    @property
    def tax_interval(self) -> RatioInterval | None:
        """The per-pair ratios (Temporal / direct, pairs in A-B-B-A order), their mean and 95 % interval."""
        return (
            None
            if self.failures
            else ratio_interval([d / r for d, r in zip(self.durable_s, self.direct_s, strict=True)])
        )

    @property
    def orchestration_s(self) -> float:
        """Mean time per run through Temporal outside any activity: scheduling, history, the plan gate."""
        return (sum(self.durable_s) - sum(self.durable_activity_s)) / len(self.durable_s)


def bench_tenant(template: TenantContract, tag: str) -> TenantContract:
    """``template`` renamed to ``tenant-<tag>`` with users ``<name>-<tag>`` so runs never collide."""
    slug = f"tenant-{tag}"
    users = [
        u.model_copy(update={"username": f"{u.username}-{tag}", "email": f"{u.username}-{tag}@example.org"})
        for u in template.users
    ]
    login = template.login.model_copy(update={"hostname": f"login.{slug}.example.internal"})
    slurm = template.slurm.model_copy(
        update={"team_account": f"ml-team-{tag}" if template.slurm.team_account else None}
    )
    return template.model_copy(
        update={"slug": slug, "display_name": f"Bench {tag}", "users": users, "login": login, "slurm": slurm}
    )


def log_to(path: Path) -> None:
    """This process's log lines (JSON, as the worker writes them in production) go to ``path``, not the output."""
    logs.configure("json")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(path.open("a"))


@asynccontextmanager
async def lab_worker(client: Client, lab: LabEndpoints, log: Path) -> AsyncIterator[OperatorClients]:
    """The production worker (``worker.run.run_worker``) pointed at the lab, on a private task queue, checking
    approvals against the bench's two stand-in operators; their clients: :data:`REQUESTER` starts runs,
    :data:`APPROVER` approves them."""
    log_to(log)
    operators = StandInOperators.make(log.parent / "approvals", REQUESTER, APPROVER)
    os.environ.update(lab.to_env() | operators.trust.env())
    service_settings.cache_clear()
    settings = WorkerSettings(TENANTFLOW_TASK_QUEUE=f"bench-lab-{uuid.uuid4().hex[:6]}")
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop, client=client))
    try:
        yield operators.clients(client, settings.task_queue)
    finally:
        stop.set()
        await worker


def lab_functions() -> dict[str, Callable[..., Any]]:
    """The real activity functions by name, each run inside an activity context (heartbeats allowed)."""
    env = ActivityEnvironment()
    return {name: functools.partial(env.run, fn) for name, fn in BY_NAME.items()}


class DirectRun(BaseModel):
    seconds: float
    activity_seconds: dict[str, float]
    ok: bool = True
    message: str = ""


def retryable(exc: Exception, policy: RetryPolicy) -> bool:
    """Whether Temporal would retry ``exc`` under ``policy``: any error but a non-retryable application error."""
    if isinstance(exc, ApplicationError):
        return not exc.non_retryable and exc.type not in (policy.non_retryable_error_types or [])
    return True


async def retried(fn: Callable[..., Any], arg: Any, policy: RetryPolicy) -> Any:
    """``fn(arg)`` retried as the workflow's activity options would, so a direct run meets the same transient
    refusals (a slurmctld still loading a new association) with the same patience as a durable one."""
    delay = policy.initial_interval.total_seconds()
    ceiling = policy.maximum_interval.total_seconds() if policy.maximum_interval else delay * 100
    attempt = 0
    while True:
        attempt += 1
        try:
            result = fn(arg)
            return await result if asyncio.iscoroutine(result) else result
        except Exception as exc:
            if attempt >= policy.maximum_attempts > 0 or not retryable(exc, policy):
                raise
            pause = exc.next_retry_delay if isinstance(exc, ApplicationError) and exc.next_retry_delay else None
            await asyncio.sleep(pause.total_seconds() if pause else delay)
            delay = min(delay * policy.backoff_coefficient, ceiling)


async def direct_once(functions: dict[str, Callable[..., Any]], contract: TenantContract) -> DirectRun:
    """The onboarding's catalogue steps as plain calls, in the workflow's order and with its retry policy, in this
    process; timed."""
    timings: dict[str, float] = {}

    async def call(step: Step[StepInput, R], arg: StepInput) -> R:
        began = time.perf_counter()
        outcome: R = await retried(functions[step.name], arg, STEP_RETRY)
        timings[step.name] = round(time.perf_counter() - began, 3)
        return outcome

    started = time.perf_counter()
    step = StepInput(contract=contract, run_id=f"direct/{contract.slug}")
    try:
        for preflight in PREFLIGHT:
            outcome = await call(preflight, step)
            if preflight is CAPACITY.preflight:
                step = step.model_copy(update={"facts": outcome.facts})
        for read in PLAN:
            await call(read, step)
        for apply in (*APPLY, *SMOKE):
            step = step.model_copy(update={"facts": (await call(apply, step)).facts})
        await call(VALIDATE, step)
        await call(HANDOVER, step)
    except Exception as exc:  # reported like a failed run through Temporal, and the tenant is still offboarded
        return DirectRun(
            seconds=time.perf_counter() - started,
            activity_seconds=timings,
            ok=False,
            message=f"{type(exc).__name__}: {exc}",
        )
    return DirectRun(seconds=time.perf_counter() - started, activity_seconds=timings)


class DurableRun(BaseModel):
    run: RunTiming
    spans: list[ActivitySpan]
    events: int

    @property
    def activity_s(self) -> float:
        """The time some activity ran: the union of the spans (a phase's local reads run at once and share their
        workflow task's window, so a plain sum would count that window once per read)."""
        covered, reached = 0.0, -math.inf
        for span in sorted(self.spans, key=lambda s: s.started):
            covered += max(0.0, span.ended - max(span.started, reached))
            reached = max(reached, span.ended)
        return covered


async def durable_once(ops: OperatorClients, contract: TenantContract) -> DurableRun:
    run = await onboard_once(ops, contract)
    history = await ops.approver.handle(run.workflow_id).fetch_history()
    return DurableRun(run=run, spans=activity_spans(history.events), events=len(history.events))


async def lab_figures(
    client: Client, lab: LabEndpoints, template: TenantContract, log: Path, pairs: int = 2
) -> LabFigures:
    """``pairs`` onboardings through Temporal and as many direct, alternating which goes first (T D, D T, ...)
    so warm caches and drift favour neither; each tenant is offboarded right after its run.

    (a) and (d) come from the first run through Temporal; worker logs go to ``log``.
    """
    tag = f"b{uuid.uuid4().hex[:5]}"
    durable: list[DurableRun] = []
    direct: list[DirectRun] = []
    tenants: list[str] = []
    cleaned = True
    calls: dict[str, dict[str, int]] = {}
    drift: LabDrift | None = None
    async with lab_worker(client, lab, log) as ops:
        for index in range(2 * pairs):
            through_temporal = (index % 2 == 0) == (index // 2 % 2 == 0)
            contract = bench_tenant(template, f"{tag}{'t' if through_temporal else 'd'}{index}")
            tenants.append(contract.slug)
            since = time.time()
            try:
                if through_temporal:
                    durable.append(await durable_once(ops, contract))
                    if drift is None and durable[-1].run.ok:
                        drift = await lab_drift(contract)
                else:
                    direct.append(await direct_once(lab_functions(), contract))
            finally:
                cleaned = (await offboard(ops, contract)).status == RunOutcome.completed and cleaned
            if through_temporal and not calls:
                spans = durable[-1].spans
                calls = calls_per_layer(
                    journals(lab),
                    spans,
                    since,
                    spans[-1].ended if spans else time.time(),
                    service_settings().slurm_namespace,
                )
    first = durable[0]
    return LabFigures(
        run=first.run,
        api_calls=calls,
        history_events=first.events,
        activity_seconds={s.name: round(s.seconds, 3) for s in first.spans},
        durable_s=[d.run.seconds for d in durable],
        durable_activity_s=[d.activity_s for d in durable],
        direct_s=[d.seconds for d in direct],
        direct_activity_seconds=[d.activity_seconds for d in direct],
        failures=[f"{d.run.workflow_id}: {d.run.message}" for d in durable if not d.run.ok]
        + [f"direct run {i + 1}: {d.message}" for i, d in enumerate(direct) if not d.ok],
        tenants=tenants,
        cleaned_up=cleaned,
        drift=drift,
    )
