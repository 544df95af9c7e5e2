"""Running catalogue steps as recorded activities: the progress every ``status`` query shows."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.runbook import Step
    from tenantflow.models.status import StepRecord

I = TypeVar("I")  # noqa: E741 - the step's input type
R = TypeVar("R")

NON_RETRYABLE = [
    "PreflightFailed",
    "Invalid",
    "Forbidden",
    "Conflict",
    "NotFound",
    "ValidationError",
    "InvariantBroken",
    "AdoptionRefused",
    "GateExpired",
]
STEP_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=NON_RETRYABLE,
)


async def execute(
    step: Step[I, R],
    arg: I,
    *,
    retry_policy: RetryPolicy,
    summary: str,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
) -> R:
    """Run ``step`` once as an activity with the catalogue's timeouts; its result decoded as the step's type."""
    result: R = await workflow.execute_activity(
        step.name,
        arg,
        result_type=step.result,
        start_to_close_timeout=step.timeout,
        heartbeat_timeout=step.heartbeat,
        retry_policy=retry_policy,
        cancellation_type=cancellation_type,
        summary=summary,
    )
    return result


class StepTracker:
    """Keeps one :class:`StepRecord` per executed step."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.target = ""
        """What the run is about (tenant slug, ns/worker): named in every activity summary for the UI."""

    async def run(self, step: Step[I, R], arg: I, *, summary: str | None = None, wait_for_cancel: bool = False) -> R:
        """Run ``step`` (``summary`` defaults to the catalogue's); with ``wait_for_cancel`` a cancel waits until the
        activity has ended, so compensation never races a step that is still writing."""
        index = len(self.records)
        said = step.summary if summary is None else summary
        self.records.append(StepRecord(name=step.name, state="running", started_at=workflow.now(), summary=said))
        try:
            result = await execute(
                step,
                arg,
                retry_policy=STEP_RETRY,
                summary=f"{step.name} [{self.target}]: {said}" if self.target else f"{step.name}: {said}",
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
                if wait_for_cancel
                else ActivityCancellationType.TRY_CANCEL,
            )
        except (Exception, asyncio.CancelledError):
            self.records[index] = self.records[index].model_copy(
                update={"state": "failed", "finished_at": workflow.now()}
            )
            raise
        self.records[index] = self.records[index].model_copy(update={"state": "done", "finished_at": workflow.now()})
        return result
