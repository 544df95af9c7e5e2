"""The five benchmark figures.

(a) one onboarding end to end with auto-approval: wall time, and with a lab the
    API calls per layer (:mod:`bench.apicalls`);
(b) N concurrent onboardings of distinct tenants on one worker process:
    throughput, p50/p95 time-to-complete, failures. The activities are simulated
    (:mod:`bench.fakes`) with the latencies measured against the lab: the lab has
    16 GPU nodes and one Slurm, room for two tenants, not a hundred;
(c) the durability tax against the lab: the same onboarding through Temporal
    versus the same activity functions called directly in one process (:mod:`bench.lab`);
(d) history events per onboarding;
(e) gate latency from the accepted ``approve_plan`` update to the next activity
    start, p50 over a few onboardings on an otherwise idle worker (and, for
    information, under the load of (b));
(f) the drift check: one lab tenant with the real activities, and a fleet of simulated
    tenants through the ``TenantDrift`` workflow (:mod:`bench.drift`);
(g) the users curve against the lab: tenants of 3, 30 and 300 users, each layer's seconds per
    additional user, every activity on its first attempt (:mod:`bench.users`).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from pydantic import BaseModel
from temporalio.client import Client

from tenantflow.bench.drift import FleetDrift, fleet_drift
from tenantflow.bench.fakes import LAB_SECONDS
from tenantflow.bench.floor import CpuMeter, floor_cpu_per_run, floor_names, server_pid
from tenantflow.bench.history import activity_spans, gate_latency
from tenantflow.bench.lab import LabFigures, lab_figures
from tenantflow.bench.processes import worker_process
from tenantflow.bench.runs import APPROVER, REQUESTER, RunTiming, onboard_once
from tenantflow.bench.users import UsersCurve, users_curve
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.approvers import OperatorClients, StandInOperators

DRIFT_CONCURRENCY = 64
"""Tenants the simulated fleet check runs at once (the most ``FleetDriftInput`` allows): checks wait on I/O."""


class Batch(BaseModel):
    """Onboardings started together: how each went, the wall time of all, what their histories say."""

    runs: list[RunTiming]
    wall_s: float
    events: list[int]
    gate_latencies_s: list[float]
    cpu_s: float | None = None
    """CPU-seconds per onboarding of the worker and the Temporal server (None: the server is not on this host)."""

    @property
    def done(self) -> list[float]:
        return [r.seconds for r in self.runs if r.ok]

    @property
    def failures(self) -> list[RunTiming]:
        return [r for r in self.runs if not r.ok]


class Figures(BaseModel):
    latencies: str
    activity_slots: int
    logs: Path
    solo: RunTiming
    gate: Batch
    load: Batch
    fleet_drift: FleetDrift
    floor_cpu_s: float | None = None
    """CPU-seconds per run of the floor: the same activities, no-ops, on a default worker (:mod:`bench.floor`)."""
    lab: LabFigures | None = None
    users: UsersCurve | None = None
    """Figure (g), with a lab and sizes to run."""

    @property
    def floor_ratio(self) -> float | None:
        cpu = self.load.cpu_s
        return cpu / self.floor_cpu_s if cpu is not None and self.floor_cpu_s else None

    @property
    def gate_p50_ms(self) -> float:
        return 1000 * statistics.median(self.gate.gate_latencies_s) if self.gate.gate_latencies_s else 0.0

    @property
    def load_gate_p50_ms(self) -> float:
        return 1000 * statistics.median(self.load.gate_latencies_s) if self.load.gate_latencies_s else 0.0

    @property
    def history_events(self) -> int:
        return self.lab.history_events if self.lab else max(self.gate.events, default=0)

    @property
    def durability_tax(self) -> float | None:
        return self.lab.durability_tax if self.lab else None


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@asynccontextmanager
async def simulated_worker(
    client: Client, seconds: dict[str, float], max_activities: int, log: Path
) -> AsyncIterator[tuple[OperatorClients, int]]:
    """A ``bench.simworker`` process on a fresh task queue, and its pid; stopped with SIGTERM (it drains) on exit.
    It checks approvals against the bench's two stand-in operators; their clients: :data:`REQUESTER` starts runs,
    :data:`APPROVER` approves them."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    table = log.with_suffix(".json")
    table.write_text(json.dumps(seconds))
    operators = StandInOperators.make(log.parent / f"approvals-{queue}", REQUESTER, APPROVER)
    env = {
        "TENANTFLOW_TASK_QUEUE": queue,
        "TENANTFLOW_MAX_ACTIVITIES": str(max_activities),
        "TENANTFLOW_LOG_FORMAT": "json",
        **operators.trust.env(),
    }
    async with worker_process(client, queue, ["tenantflow.bench.simworker", str(table)], env, log) as pid:
        yield operators.clients(client, queue), pid


async def onboard_batch(ops: OperatorClients, contracts: list[TenantContract], meter: CpuMeter | None = None) -> Batch:
    """Onboard ``contracts`` all at once; histories are read after the last one ends, not while they run (nor
    while ``meter`` counts the CPU time the runs cost)."""
    started = time.perf_counter()
    if meter:
        meter.start()
    runs = await asyncio.gather(*(onboard_once(ops, c) for c in contracts))
    wall = time.perf_counter() - started
    cpu_s = meter.spent() / len(contracts) if meter and meter.server else None
    reading = asyncio.Semaphore(8)

    async def history(run: RunTiming) -> tuple[int, float | None]:
        async with reading:
            events = (await ops.approver.handle(run.workflow_id).fetch_history()).events
        return len(events), gate_latency(events)

    read = await asyncio.gather(*(history(r) for r in runs))
    return Batch(
        runs=runs,
        wall_s=wall,
        events=[n for n, _ in read],
        gate_latencies_s=[s for _, s in read if s is not None],
        cpu_s=cpu_s,
    )


async def bench(
    client: Client,
    template: TenantContract,
    tenants: int = 100,
    gate_runs: int = 5,
    latency_s: float | None = None,
    max_activities: int | None = None,
    lab: LabEndpoints | None = None,
    tax_pairs: int = 2,
    log_dir: Path | None = None,
    drift_tenants: int = 1000,
    users_sizes: tuple[int, ...] = (),
) -> Figures:
    """Every figure: the lab part first (its latencies then drive the simulation), then the simulated runs.

    ``latency_s`` replaces the per-activity latencies by one value (quick runs, tests).
    """
    logs = Path(log_dir or tempfile.mkdtemp(prefix="tenantflow-bench-"))
    logs.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:5]
    measured = await lab_figures(client, lab, template, logs / f"lab-worker-{tag}.log", tax_pairs) if lab else None
    curve = (
        await users_curve(client, lab, template, logs / f"users-worker-{tag}.log", users_sizes)
        if lab and users_sizes
        else None
    )
    seconds = {"*": latency_s} if latency_s is not None else measured.activity_seconds if measured else LAB_SECONDS
    if latency_s is None and measured:
        seconds = {**seconds, "drift.tenant": measured.drift.seconds if measured.drift else LAB_SECONDS["drift.tenant"]}
    described = (
        f"every activity {latency_s * 1000:g} ms"
        if latency_s is not None
        else "latencies measured against the lab in this run"
        if measured
        else "latencies measured against the lab (bench.fakes.LAB_SECONDS)"
    )

    def tenant(n: str) -> TenantContract:
        return template.model_copy(update={"slug": f"tenant-s{tag}-{n}"})

    slots = max_activities or max(tenants, DRIFT_CONCURRENCY)
    async with simulated_worker(client, seconds, slots, logs / f"simworker-{tag}.log") as (ops, pid):
        api = ops.approver
        solo = await onboard_once(ops, tenant("solo"))
        gate = await onboard_batch(ops, [tenant(f"g{i}") for i in range(gate_runs)])
        meter = CpuMeter(pid, server_pid(client))
        load = await onboard_batch(ops, [tenant(f"{i:04d}") for i in range(tenants)], meter)
        fleet = await fleet_drift(api, template, drift_tenants, concurrency=min(DRIFT_CONCURRENCY, slots))
        names = floor_names(activity_spans((await api.handle(solo.workflow_id).fetch_history()).events))
    return Figures(
        latencies=described,
        activity_slots=slots,
        logs=logs,
        solo=solo,
        gate=gate,
        load=load,
        fleet_drift=fleet,
        floor_cpu_s=await floor_cpu_per_run(client, names, tenants, logs / f"floor-{tag}.log"),
        lab=measured,
        users=curve,
    )
