"""Running activities as named, recorded steps: the progress every ``status`` query shows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.status import StepRecord

T = TypeVar("T")

NON_RETRYABLE = ["PreflightFailed", "Invalid", "Forbidden", "Conflict", "NotFound", "ValidationError",
                 "InvariantBroken", "AdoptionRefused", "GateExpired"]
DEFAULT_HEARTBEAT = timedelta(seconds=60)
"""Every step has a heartbeat timeout, so a crashed worker's step is retried within a minute rather than at its
start-to-close timeout; steps that run longer heartbeat."""
STEP_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                         maximum_interval=timedelta(seconds=30), maximum_attempts=10,
                         non_retryable_error_types=NON_RETRYABLE)


class StepTracker:
    """Keeps one :class:`StepRecord` per executed step."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.target = ""
        """What the run is about (tenant slug, ns/worker): named in every activity summary for the UI."""

    async def run(self, name: str, arg: Any, result_type: type[T], *, summary: str,
                  timeout: timedelta = timedelta(minutes=5),
                  heartbeat: timedelta = DEFAULT_HEARTBEAT, wait_for_cancel: bool = False) -> T:
        """Run activity ``name``; with ``wait_for_cancel`` a cancel waits until the activity has ended, so
        compensation never races a step that is still writing."""
        index = len(self.records)
        self.records.append(StepRecord(name=name, state="running", started_at=workflow.now(), summary=summary))
        try:
            result = await workflow.execute_activity(
                name, arg, result_type=result_type, start_to_close_timeout=timeout,
                heartbeat_timeout=heartbeat, retry_policy=STEP_RETRY,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED if wait_for_cancel
                else ActivityCancellationType.TRY_CANCEL,
                summary=f"{name} [{self.target}]: {summary}" if self.target else f"{name}: {summary}")
        except BaseException:
            self.records[index] = self.records[index].model_copy(
                update={"state": "failed", "finished_at": workflow.now()})
            raise
        self.records[index] = self.records[index].model_copy(
            update={"state": "done", "finished_at": workflow.now()})
        return result
