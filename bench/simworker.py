"""The worker process of the concurrency bench: the production worker with simulated activity bodies.

``python -m bench.simworker SECONDS_JSON`` runs :func:`worker.run.run_worker`
(its thread pool, interceptors, logging, every workflow) with the activities of
:mod:`bench.fakes` sleeping the latencies in the JSON file (``{name: seconds}``,
``{"*": s}`` for one latency everywhere). Temporal address, task queue and
activity slots come from the usual environment (``TEMPORAL_ADDRESS``,
``TENANTFLOW_TASK_QUEUE``, ``TENANTFLOW_MAX_ACTIVITIES``). A process of its own,
so the bench's client work does not share the worker's interpreter lock.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tenantflow.bench.fakes import as_activities, simulated_activities
from tenantflow.worker import logs
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker, stop_on_signals


def main() -> None:
    seconds: dict[str, float] = json.loads(Path(sys.argv[1]).read_text())
    settings = WorkerSettings()
    logs.configure(settings.log_format, settings.log_level)
    activities = as_activities(simulated_activities(seconds, default_s=seconds.get("*", 0.01)))

    async def serve() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await run_worker(settings, stop, activities=activities)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
