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
    information, under the load of (b)).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from pydantic import BaseModel
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from tenantflow.bench.fakes import LAB_SECONDS
from tenantflow.bench.history import gate_latency
from tenantflow.bench.lab import LabFigures, lab_figures
from tenantflow.bench.runs import RunTiming, onboard_once
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient

REPO = Path(__file__).resolve().parents[1]


class Batch(BaseModel):
    """Onboardings started together: how each went, the wall time of all, what their histories say."""

    runs: list[RunTiming]
    wall_s: float
    events: list[int]
    gate_latencies_s: list[float]

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
    lab: LabFigures | None = None

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
) -> AsyncIterator[TenantflowClient]:
    """A ``bench.simworker`` process on a fresh task queue; stopped with SIGTERM (it drains) on exit."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    table = log.with_suffix(".json")
    table.write_text(json.dumps(seconds))
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        "TENANTFLOW_TASK_QUEUE": queue,
        "TENANTFLOW_MAX_ACTIVITIES": str(max_activities),
        "TENANTFLOW_LOG_FORMAT": "json",
    }
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tenantflow.bench.simworker", str(table), cwd=REPO, env=env, stdout=out, stderr=out
        )
    try:
        await wait_for_poller(client, queue, process)
        yield TenantflowClient(client, queue)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=60)
        except TimeoutError:
            process.kill()
            await process.wait()


async def wait_for_poller(
    client: Client, queue: str, process: asyncio.subprocess.Process, timeout_s: float = 120
) -> None:
    """Wait until the worker process polls ``queue``, so its start-up is not timed as part of a run."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    deadline = time.monotonic() + timeout_s
    while not (await client.workflow_service.describe_task_queue(request)).pollers:
        if process.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the bench worker never polled {queue} (exit code {process.returncode})")
        await asyncio.sleep(0.2)


async def onboard_batch(api: TenantflowClient, contracts: list[TenantContract]) -> Batch:
    """Onboard ``contracts`` all at once; histories are read after the last one ends, not while they run."""
    started = time.perf_counter()
    runs = await asyncio.gather(*(onboard_once(api, c) for c in contracts))
    wall = time.perf_counter() - started
    reading = asyncio.Semaphore(8)

    async def history(run: RunTiming) -> tuple[int, float | None]:
        async with reading:
            events = (await api.handle(run.workflow_id).fetch_history()).events
        return len(events), gate_latency(events)

    read = await asyncio.gather(*(history(r) for r in runs))
    return Batch(
        runs=runs, wall_s=wall, events=[n for n, _ in read], gate_latencies_s=[s for _, s in read if s is not None]
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
) -> Figures:
    """Every figure: the lab part first (its latencies then drive the simulation), then the simulated runs.

    ``latency_s`` replaces the per-activity latencies by one value (quick runs, tests).
    """
    logs = Path(log_dir or tempfile.mkdtemp(prefix="tenantflow-bench-"))
    tag = uuid.uuid4().hex[:5]
    measured = await lab_figures(client, lab, template, logs / f"lab-worker-{tag}.log", tax_pairs) if lab else None
    seconds = {"*": latency_s} if latency_s is not None else measured.activity_seconds if measured else LAB_SECONDS
    described = (
        f"every activity {latency_s * 1000:g} ms"
        if latency_s is not None
        else "latencies measured against the lab in this run"
        if measured
        else "latencies measured against the lab (bench.fakes.LAB_SECONDS)"
    )

    def tenant(n: str) -> TenantContract:
        return template.model_copy(update={"slug": f"tenant-s{tag}-{n}"})

    slots = max_activities or max(tenants, 32)
    async with simulated_worker(client, seconds, slots, logs / f"simworker-{tag}.log") as api:
        solo = await onboard_once(api, tenant("solo"))
        gate = await onboard_batch(api, [tenant(f"g{i}") for i in range(gate_runs)])
        load = await onboard_batch(api, [tenant(f"{i:04d}") for i in range(tenants)])
    return Figures(latencies=described, activity_slots=slots, logs=logs, solo=solo, gate=gate, load=load, lab=measured)
