"""Run the worker until SIGINT/SIGTERM, then drain in-flight tasks and exit."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.worker import Worker

from tenantflow.worker import logging as worker_logging
from tenantflow.worker.approvals import FourEyes
from tenantflow.worker.config import WorkerSettings, load_env_file
from tenantflow.worker.health import HealthSettings, Probe, serve_health
from tenantflow.worker.interceptors import StepObservability
from tenantflow.worker.metrics import sdk_runtime, serve_metrics
from tenantflow.worker.registry import ACTIVITIES, WORKFLOWS
from tenantflow.worker.temporal import connect

log = structlog.get_logger("tenantflow.worker")


def stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


async def run_worker(
    settings: WorkerSettings,
    stop: asyncio.Event,
    client: Client | None = None,
    *,
    workflows: Sequence[type] = WORKFLOWS,
    activities: Sequence[Callable[..., Any]] = ACTIVITIES,
) -> None:
    """Poll ``settings.task_queue`` until ``stop`` is set, then drain in-flight tasks.

    With ``TENANTFLOW_METRICS_PORT`` set, ``/metrics`` there serves the step metrics and (when this
    function makes the client) the Temporal SDK's metrics.
    """
    load_env_file(settings)
    sdk_metrics: str | None = None
    if client is None:
        runtime = None
        if settings.metrics_port:
            runtime, sdk_metrics = sdk_runtime()
        client = await connect(settings, runtime)
    async with contextlib.AsyncExitStack() as stack:
        if settings.metrics_port:
            await stack.enter_async_context(serve_metrics(settings.metrics_port, sdk_metrics))
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=settings.max_concurrent_activities))
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=workflows,
            activities=activities,
            activity_executor=pool,
            max_concurrent_activities=settings.max_concurrent_activities,
            interceptors=[StepObservability(), FourEyes(settings.four_eyes_workflows)],
            graceful_shutdown_timeout=timedelta(seconds=30),
        )
        await stack.enter_async_context(serve_health(HealthSettings(), Probe(client, worker, stop)))
        log.info(
            "worker started",
            address=settings.address,
            task_queue=settings.task_queue,
            workflows=len(workflows),
            activities=len(activities),
            metrics_port=settings.metrics_port,
        )
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
