"""Run the worker until SIGINT/SIGTERM, then drain in-flight tasks and exit."""

from __future__ import annotations

import asyncio
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import structlog
from temporalio.client import Client
from temporalio.worker import Worker

from lab.endpoints import read_env_file
from worker import logging as worker_logging
from worker.config import WorkerSettings
from worker.registry import ACTIVITIES, WORKFLOWS
from worker.temporal import connect, runtime_with_metrics

log = structlog.get_logger("tenantflow.worker")


def load_env_file(settings: WorkerSettings) -> None:
    """Export the KEY=VALUE file named by TENANTFLOW_ENV_FILE without overriding the environment."""
    if settings.env_file is None:
        return
    for key, value in read_env_file(settings.env_file).items():
        os.environ.setdefault(key, value)


def stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


async def run_worker(settings: WorkerSettings, stop: asyncio.Event, client: Client | None = None) -> None:
    """Poll ``settings.task_queue`` until ``stop`` is set, then drain in-flight tasks."""
    load_env_file(settings)
    if client is None:
        runtime = runtime_with_metrics(settings.metrics_port) if settings.metrics_port else None
        client = await connect(settings, runtime)
    with ThreadPoolExecutor(max_workers=settings.max_concurrent_activities) as pool:
        worker = Worker(client, task_queue=settings.task_queue, workflows=WORKFLOWS, activities=ACTIVITIES,
                        activity_executor=pool, max_concurrent_activities=settings.max_concurrent_activities,
                        graceful_shutdown_timeout=timedelta(seconds=30))
        log.info("worker started", address=settings.address, task_queue=settings.task_queue,
                 workflows=len(WORKFLOWS), activities=len(ACTIVITIES))
        async with worker:
            await stop.wait()
            log.info("worker stopping: draining in-flight tasks")
    log.info("worker stopped")


def main() -> None:
    settings = WorkerSettings()
    worker_logging.configure(settings.log_format, settings.log_level)

    async def serve() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await run_worker(settings, stop)

    asyncio.run(serve())
