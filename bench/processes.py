"""Bench workers in processes of their own (so the bench's client work does not share their interpreter lock, and
their CPU time can be read from ``/proc``): started on a task queue, waited for until they poll it, stopped with
SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

REPO = Path(__file__).resolve().parents[1]


@asynccontextmanager
async def worker_process(
    client: Client, queue: str, module_args: list[str], env: dict[str, str], log: Path
) -> AsyncIterator[int]:
    """``python -m MODULE ARGS`` with ``client``'s server in its environment (and ``env``), logging to ``log``;
    yields its pid once it polls ``queue``."""
    environ = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": client.namespace,
        **env,
    }
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", *module_args, cwd=REPO, env=environ, stdout=out, stderr=out
        )
    try:
        await wait_for_poller(client, queue, process)
        yield process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=60)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise RuntimeError(f"the bench worker did not drain within 60 s of SIGTERM; its log: {log}") from None
    if process.returncode != 0:
        raise RuntimeError(f"the bench worker exited with status {process.returncode}; its log: {log}")


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
