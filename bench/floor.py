"""The orchestration floor (issue 15 item 2): what the same sequence of activities costs Temporal and a worker
with nothing of tenantflow in between, in CPU-seconds per run read from ``/proc``.

``BenchFloor`` (:mod:`bench.floorworker`) calls, one after another, no-op activities with the names an onboarding
called, in its order, on a plain ``temporalio.worker.Worker`` with default settings in a process of its own; the
steps the onboarding ran as local activities it calls as local activities too (one after another where the
onboarding ran a phase's at once: the same markers in the same workflow task), so both histories have the same
events per step.
CPU time is ``utime + stime`` of ``/proc/PID/stat`` (proc(5)); the Temporal server's process is the one listening
on the client's port (``/proc/net/tcp*`` and ``/proc/PID/fd``), so the figure is only available with a server on
this host.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

from temporalio.client import Client

from tenantflow.bench.floorworker import FLOOR_WORKFLOW, LOCAL
from tenantflow.bench.history import ActivitySpan
from tenantflow.bench.processes import worker_process


def floor_names(spans: list[ActivitySpan]) -> list[str]:
    """What the floor calls for an onboarding's ``spans``, in order: a local activity's name ``local:``-prefixed."""
    return [f"{LOCAL}{span.name}" if span.local else span.name for span in spans]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` and its reaped children, in seconds (proc(5): fields 14 to 17)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def listening_pid(port: int) -> int | None:
    """The process with a socket listening on TCP ``port`` on this host, or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if int(cols[1].rpartition(":")[2], 16) == port and cols[3] == "0A":
                inodes.add(f"socket:[{cols[9]}]")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                return int(entry.name)
        except OSError:
            continue
    return None


class CpuMeter:
    """CPU-seconds of the worker process and the server process (when it runs on this host) since :meth:`start`."""

    def __init__(self, worker_pid: int, server_pid: int | None) -> None:
        self.pids = [worker_pid] if server_pid is None else [worker_pid, server_pid]
        self.server = server_pid is not None
        self.started = 0.0

    def now(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def start(self) -> None:
        self.started = self.now()

    def spent(self) -> float:
        return self.now() - self.started


def server_pid(client: Client) -> int | None:
    """The Temporal server's pid when it listens on this host (the client's port), else None."""
    return listening_pid(int(client.service_client.config.target_host.rpartition(":")[2]))


async def floor_cpu_per_run(client: Client, names: list[str], runs: int, log: Path) -> float | None:
    """CPU-seconds (worker + server) per ``BenchFloor`` run of ``names``, ``runs`` at once; None without the
    server's process on this host."""
    server = server_pid(client)
    if server is None:
        return None
    queue = f"floor-{uuid.uuid4().hex[:8]}"
    async with worker_process(client, queue, ["tenantflow.bench.floorworker", queue, *names], {}, log) as pid:
        meter = CpuMeter(pid, server)
        meter.start()
        await asyncio.gather(
            *(client.execute_workflow(FLOOR_WORKFLOW, names, id=f"{queue}-{n}", task_queue=queue) for n in range(runs))
        )
        return meter.spent() / runs
