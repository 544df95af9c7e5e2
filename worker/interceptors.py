"""Activity interceptor: structlog context (run, tenant, layer, step) and per-step Prometheus metrics.

Every activity runs with ``run_id``, ``workflow_id``, ``tenant`` (or ``worker``),
``layer``, ``step`` and ``attempt`` bound as structlog contextvars, so every log
line an activity writes (structlog or ``activity.logger``) carries them; sync
activities inherit them because the SDK copies the context into the thread.
Each execution is timed into ``tenantflow_step_duration_seconds`` and each
failed attempt counted in ``tenantflow_step_failures_total``.
"""

from __future__ import annotations

import time
from typing import Any

import structlog
from prometheus_client import Counter, Histogram
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

STEP_SECONDS = Histogram(
    "tenantflow_step_duration_seconds",
    "Duration of one activity attempt by layer and step",
    ["layer", "step", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
)
STEP_FAILURES = Counter(
    "tenantflow_step_failures_total",
    "Failed activity attempts by layer, step and error type",
    ["layer", "step", "error"],
)
log = structlog.get_logger("tenantflow.activity")


def target_of(args: Any) -> dict[str, str]:
    """The tenant slug or worker cluster an activity input is about, if it names one."""
    contract = getattr(args[0], "contract", None) if args else None
    if contract is None:
        return {}
    if hasattr(contract, "slug"):
        return {"tenant": str(contract.slug)}
    if hasattr(contract, "worker_name"):
        return {"worker": f"{contract.tenant_namespace}/{contract.worker_name}"}
    return {}


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        layer, _, step = info.activity_type.partition(".")
        context = {
            "workflow_id": info.workflow_id or "",
            "run_id": info.workflow_run_id or "",
            "layer": layer,
            "step": step or layer,
            "attempt": info.attempt,
            **target_of(input.args),
        }
        started = time.perf_counter()
        outcome = "ok"
        with structlog.contextvars.bound_contextvars(**context):
            try:
                result = await super().execute_activity(input)
                log.info("activity attempt finished", seconds=round(time.perf_counter() - started, 3))
                return result
            except BaseException as exc:
                outcome = "failed"
                error = str(getattr(exc, "type", None) or type(exc).__name__)
                STEP_FAILURES.labels(layer, step or layer, error).inc()
                log.warning("activity attempt failed", error=error, message=str(exc))
                raise
            finally:
                STEP_SECONDS.labels(layer, step or layer, outcome).observe(time.perf_counter() - started)


class StepObservability(Interceptor):
    """Worker interceptor installing the activity context and metrics."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)
