"""The floor's worker (``python -m tenantflow.bench.floorworker QUEUE NAME...``): ``BenchFloor`` calls no-op
activities with the given names one after another, on a plain ``temporalio.worker.Worker`` with default settings;
a name ``local:<name>`` is called as a local activity (as the onboarding ran it).
Only temporalio is imported at the top: the workflow sandbox re-imports this module for every run; the
process ends as :mod:`worker.program` says."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

FLOOR_WORKFLOW = "BenchFloor"
LOCAL = "local:"
"""The prefix of a name the floor calls as a local activity."""


@workflow.defn(name=FLOOR_WORKFLOW)
class BenchFloor:
    @workflow.run
    async def run(self, names: list[str]) -> int:
        for name in names:
            if name.startswith(LOCAL):
                await workflow.execute_local_activity(name[len(LOCAL) :], start_to_close_timeout=timedelta(minutes=1))
            else:
                await workflow.execute_activity(name, start_to_close_timeout=timedelta(minutes=1))
        return len(names)


def noop_activity(name: str) -> Any:
    async def noop() -> None:
        return None

    return activity.defn(name=name)(noop)


async def serve(queue: str, names: list[str]) -> None:
    """Poll ``queue`` until SIGTERM or SIGINT, then drain (the bench stops its workers with SIGTERM)."""
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], namespace=os.environ["TEMPORAL_NAMESPACE"])
    activities = [noop_activity(name) for name in sorted({name.removeprefix(LOCAL) for name in names})]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with Worker(client, task_queue=queue, workflows=[BenchFloor], activities=activities):
        await stop.wait()


if __name__ == "__main__":
    from tenantflow.worker.program import run_program

    run_program(lambda: asyncio.run(serve(sys.argv[1], sys.argv[2:])))
