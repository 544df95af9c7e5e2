"""Running catalogue steps as recorded activities: the progress every ``status`` query shows.

A step the catalogue marks :attr:`Step.local` (short and read-only) may run as a local activity: the worker
that runs the workflow task runs it, with the same retry policy and timeout, and the history keeps one
``MarkerRecorded`` event naming its activity type instead of an activity's three events and the workflow
task that follows them (https://docs.temporal.io/local-activity).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.results import Finding
    from tenantflow.models.status import StepRecord
    from tenantflow.models.step import Step

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


async def execute_local(step: Step[I, R], arg: I, *, retry_policy: RetryPolicy, summary: str) -> R:
    """Run ``step`` once as a local activity with the catalogue's timeout; a local activity has no heartbeat."""
    assert step.local, f"{step.name} is not a local step: it writes or runs long"
    result: R = await workflow.execute_local_activity(
        step.name,
        arg,
        result_type=step.result,
        start_to_close_timeout=step.timeout,
        retry_policy=retry_policy,
        summary=summary,
    )
    return result


def found_errors(result: object) -> list[Finding]:
    """The findings of a step's result that block the run (checks that found an error): such a step is shown
    ``failed``, not ``done``, although its activity completed."""
    findings = getattr(result, "findings", None)
    if findings is None:
        findings = result if isinstance(result, list) else [result]
    return [f for f in findings if isinstance(f, Finding) and f.blocks]


def error_text(exc: BaseException) -> str:
    """A failed step's innermost error as ``Type: message`` (an activity's failure wraps it in ``ActivityError``,
    whose own message is only "Activity task failed")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, ApplicationError):
        return f"{exc.type}: {exc.message}" if exc.type else exc.message
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return str(exc) or type(exc).__name__


class StepTracker:
    """Keeps one :class:`StepRecord` per executed step; a step run again with the same summary (a re-plan)
    replaces its earlier row."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.target = ""
        """What the run is about (tenant slug, ns/worker): named in every activity summary for the UI."""

    async def run(
        self,
        step: Step[I, R],
        arg: I,
        *,
        summary: str | None = None,
        wait_for_cancel: bool = False,
        local: bool = False,
    ) -> R:
        """Run ``step`` (``summary`` defaults to the catalogue's); with ``wait_for_cancel`` a cancel waits until the
        activity has ended, so compensation never races a step that is still writing; with ``local`` as a local
        activity (only a :attr:`Step.local` step)."""
        said = step.summary if summary is None else summary
        row = StepRecord(name=step.name, state="running", started_at=workflow.now(), summary=said)
        self.records = [r for r in self.records if (r.name, r.summary) != (step.name, said)]
        self.records.append(row)
        shown = f"{step.name} [{self.target}]: {said}" if self.target else f"{step.name}: {said}"
        try:
            if local:
                result = await execute_local(step, arg, retry_policy=STEP_RETRY, summary=shown)
            else:
                result = await execute(
                    step,
                    arg,
                    retry_policy=STEP_RETRY,
                    summary=shown,
                    cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
                    if wait_for_cancel
                    else ActivityCancellationType.TRY_CANCEL,
                )
        except (Exception, asyncio.CancelledError) as exc:
            self.finish(row, "failed", error_text(exc))
            raise
        blocking = found_errors(result)
        self.finish(row, "failed" if blocking else "done", "; ".join(f"{f.check}: {f.message}" for f in blocking))
        return result

    def finish(self, row: StepRecord, state: str, error: str = "") -> None:
        """Mark ``row`` (found by identity: steps running at once add and replace rows around it) ``state``."""
        for index, record in enumerate(self.records):
            if record is row:
                update = {"state": state, "finished_at": workflow.now(), "error": error}
                self.records[index] = row.model_copy(update=update)
