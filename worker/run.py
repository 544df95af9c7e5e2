"""Run the worker until SIGINT/SIGTERM, then drain in-flight tasks and exit.

With ``TENANTFLOW_DEPLOYMENT_NAME`` and ``TENANTFLOW_BUILD_ID`` set, the worker joins that Temporal Worker
Deployment as that version, and a workflow it starts is pinned to the version it started on unless its type declares
otherwise (:func:`deployment_config`; ``TenantLifecycle`` auto-upgrades, ``workflows/README.md`` says why); unset, the
worker is unversioned as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import Interceptor, Worker, WorkerDeploymentConfig

from tenantflow.worker import logs
from tenantflow.worker.approvals import ApprovalRules, Approvals, GatePolicy
from tenantflow.worker.codec import EncryptionRequired
from tenantflow.worker.config import WorkerSettings, load_env_file
from tenantflow.worker.health import HealthSettings, Probe, serve_health
from tenantflow.worker.heartbeat_cap import HeartbeatCap
from tenantflow.worker.interceptors import StepObservability
from tenantflow.worker.metrics import sdk_runtime, serve_metrics
from tenantflow.worker.principals import IdentityMap, PrincipalsFileError
from tenantflow.worker.registry import ACTIVITIES, WORKFLOWS
from tenantflow.worker.signatures import AllowedSigners, SignersFileError
from tenantflow.worker.temporal import TemporalConnectError, connect
from tenantflow.workflows.lifecycle_versioned import for_versioned_worker

log = structlog.get_logger("tenantflow.worker")


def stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


def deployment_config(settings: WorkerSettings) -> WorkerDeploymentConfig | None:
    """The Worker Deployment version of this worker, workflows pinned unless their type declares a behaviour (only
    the lifecycle, :mod:`workflows.lifecycle_versioned`, registered in its place on a versioned worker); None
    when unversioned (https://docs.temporal.io/production-deployment/worker-deployments/worker-versioning)."""
    if settings.deployment_name is None or settings.build_id is None:
        return None
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=settings.deployment_name, build_id=settings.build_id),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )


def approval_rules(settings: WorkerSettings) -> ApprovalRules:
    """What gate answers must prove (``TENANTFLOW_VERIFIED_APPROVERS``, ``TENANTFLOW_FOUR_EYES``), with the identity
    map and allowed signers they are checked against; a file that cannot be read raises naming its setting."""
    rules = ApprovalRules(
        four_eyes=GatePolicy.parse(settings.four_eyes),
        verified=GatePolicy.parse(settings.verified_approvers),
        identities=IdentityMap.load(settings.principals_file),
        signers=AllowedSigners.load(settings.allowed_signers_file) if settings.allowed_signers_file else None,
    )
    guarded = sorted(rules.four_eyes.workflow_types | rules.verified.workflow_types)
    if guarded and (settings.principals_file is None or rules.signers is None):
        log.warning(
            "approvals of these workflows need a verified, distinct principal, but TENANTFLOW_PRINCIPALS or "
            "TENANTFLOW_ALLOWED_SIGNERS is unset: every approval of them will be refused until both are set",
            workflows=guarded,
        )
    return rules


def interceptors(settings: WorkerSettings) -> list[Interceptor]:
    """Step logs and metrics, the approval rules, and the heartbeat bound when one is set."""
    chain: list[Interceptor] = [StepObservability(), Approvals(approval_rules(settings))]
    if settings.max_heartbeat_timeout_s is not None:
        chain.append(HeartbeatCap(timedelta(seconds=settings.max_heartbeat_timeout_s)))
    return chain


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
    chain = interceptors(settings)  # before connecting: an unreadable identity map or signers file stops the start
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
        versioning = deployment_config(settings)
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=list(workflows) if versioning is None else for_versioned_worker(list(workflows)),
            activities=activities,
            activity_executor=pool,
            max_concurrent_activities=settings.max_concurrent_activities,
            interceptors=chain,
            graceful_shutdown_timeout=timedelta(seconds=30),
            deployment_config=versioning,
        )
        await stack.enter_async_context(serve_health(HealthSettings(), Probe(client, worker, stop)))
        if client.data_converter.payload_codec is None:
            log.warning(
                "payloads are not encrypted: no TENANTFLOW_CODEC_KEY_FILE or TENANTFLOW_CODEC_KEYS (set "
                "TENANTFLOW_REQUIRE_ENCRYPTION=true to refuse to start without them)"
            )
        log.info(
            "worker started",
            address=client.service_client.config.target_host,
            namespace=client.namespace,
            task_queue=settings.task_queue,
            workflows=len(workflows),
            activities=len(activities),
            metrics_port=settings.metrics_port,
            deployment=settings.deployment_name,
            build_id=settings.build_id,
        )
        async with worker:
            await stop.wait()
            log.info("worker stopping: draining in-flight tasks")
    log.info("worker stopped")


def main(activities: Sequence[Callable[..., Any]] = ACTIVITIES) -> None:
    """Run the worker (with ``activities``: the bench's simulated worker passes its own); a connection that
    fails, encryption required without keys, or an identity map or allowed-signers file that cannot be used ends
    it with exit code 1 and the message naming the setting."""
    settings = WorkerSettings()
    logs.configure(settings.log_format, settings.log_level)

    async def serve() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await run_worker(settings, stop, activities=activities)

    try:
        asyncio.run(serve())
    except TemporalConnectError as exc:
        print(f"tenantflow worker: cannot connect to Temporal: {exc.message}", file=sys.stderr)
        sys.exit(1)
    except (EncryptionRequired, PrincipalsFileError, SignersFileError) as exc:
        print(f"tenantflow worker: {exc}", file=sys.stderr)
        sys.exit(1)
