"""The worker process of the concurrency bench: the production worker with simulated activity bodies.

``python -m bench.simworker SECONDS_JSON`` runs :func:`worker.run.main`
(its thread pool, interceptors, logging, every workflow, and its exit through
:func:`worker.program.run_program`) with the activities of :mod:`bench.fakes`
sleeping the latencies in the JSON file (``{name: seconds}``, ``{"*": s}`` for
one latency everywhere), and the real ``records.tenant_holder`` (a tenant run whose claim of its tenant's hold
failed asks the bench's own Temporal server who holds it). Temporal address, task queue and activity slots come
from the usual environment (``TEMPORAL_ADDRESS``, ``TENANTFLOW_TASK_QUEUE``,
``TENANTFLOW_MAX_ACTIVITIES``). A process of its own, so the bench's client work
does not share the worker's interpreter lock.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tenantflow.activities.records.hold import tenant_holder
from tenantflow.bench.fakes import as_activities, simulated_activities
from tenantflow.worker.program import run_program
from tenantflow.worker.run import main


def simulated_worker() -> None:
    """The production worker's ``main`` with every activity sleeping its latency from the file in ``argv[1]``."""
    seconds: dict[str, float] = json.loads(Path(sys.argv[1]).read_text())
    simulated = as_activities(simulated_activities(seconds, default_s=seconds.get("*", 0.01)))
    main(activities=[*simulated, tenant_holder])


if __name__ == "__main__":
    run_program(simulated_worker)
