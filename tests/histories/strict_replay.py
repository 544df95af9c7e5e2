"""Replay that also compares every activity's arguments with the recorded ones.

Temporal's replay checks the kind and order of commands (an activity's type, a
timer) but not an activity's input: an unversioned change to what a step is given
replays green. :func:`replay_strictly` records each ``start_activity`` of the
replayed code through a worker interceptor and compares it, in order, with the
``ActivityTaskScheduled`` events of the history (both decoded to JSON values).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.worker import (
    Interceptor,
    Replayer,
    StartActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from temporalio.workflow import ActivityHandle

from tenantflow.worker.codec import PLAIN

Scheduled = tuple[str, list[Any]]
TIME_SKIPPING_IDS = {
    "onboarding-gate-timeout": "tenant/tenant-timeout",
    "onboarding-rollback-incomplete": "tenant/tenant-rollback-incomplete",
    "onboarding-gate-notified-local": "tenant/tenant-gate-notified",
    "enrollment-resume-expired": "enroll/forecasting/fp-411373",
    "lifecycle-renewed": "lifecycle/tenant-term",
    "lifecycle-expired": "lifecycle/tenant-term",
    "lifecycle-renew-gated": "lifecycle/tenant-term-gated",
    "lifecycle-renewal-notified": "lifecycle/tenant-term-notified",
    "lifecycle-expired-latest-record": "lifecycle/tenant-term-latest",
    "lifecycle-expired-notifying": "lifecycle/tenant-term-today",
    "lifecycle-parentless": "lifecycle/tenant-term-orphan",
    "onboarding-lifecycle": "tenant/tenant-onboard-term",
    "offboarding-ends-term": "offboard/tenant-gone",
}
"""The workflow ids of the histories recorded on the time-skipping server, which does not record them."""


class ArgumentsChanged(AssertionError):
    """The replayed code gave an activity other arguments than the history recorded."""


class _Outbound(WorkflowOutboundInterceptor):
    def __init__(self, following: WorkflowOutboundInterceptor, scheduled: list[tuple[str, list[Any]]]) -> None:
        super().__init__(following)
        self._scheduled = scheduled

    def start_activity(self, input: StartActivityInput) -> ActivityHandle[Any]:
        self._scheduled.append((input.activity, list(input.args)))
        return super().start_activity(input)


class RecordActivities(Interceptor):
    """Keeps each activity the replayed workflow starts, with its arguments."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[str, list[Any]]] = []

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        scheduled = self.scheduled

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(_Outbound(outbound, scheduled))

        return Inbound


def as_json(values: list[Any]) -> list[Any]:
    return PLAIN.payload_converter.from_payloads(PLAIN.payload_converter.to_payloads(values))


def recorded(history: WorkflowHistory) -> list[Scheduled]:
    return [
        (
            e.activity_task_scheduled_event_attributes.activity_type.name,
            PLAIN.payload_converter.from_payloads(list(e.activity_task_scheduled_event_attributes.input.payloads)),
        )
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


def load(path: Path) -> WorkflowHistory:
    """The history in ``path`` under its recorded workflow id (activities get it as ``run_id``)."""
    text = path.read_text()
    started = WorkflowHistory.from_json(path.stem, text).events[0].workflow_execution_started_event_attributes
    return WorkflowHistory.from_json(started.workflow_id or TIME_SKIPPING_IDS[path.stem], text)


@cache
def patch_ids(path: Path) -> frozenset[str]:
    """The patch ids of the markers ``path`` recorded (read once per process: test modules that define workflows are
    imported again for each run in the sandbox)."""
    return frozenset(
        PLAIN.payload_converter.from_payloads(list(marker.details["patch-data"].payloads))[0]["id"]
        for event in load(path).events
        if (marker := event.marker_recorded_event_attributes).marker_name == "core_patch"
    )


async def replay_strictly(path: Path, workflows: list[type]) -> None:
    """Replay ``path`` with ``workflows``; raise NondeterminismError or :class:`ArgumentsChanged`."""
    history = load(path)
    record = RecordActivities()
    await Replayer(workflows=workflows, data_converter=PLAIN, interceptors=[record]).replay_workflow(history)
    replayed = [(name, as_json(args)) for name, args in record.scheduled]
    for index, (want, got) in enumerate(zip(recorded(history), replayed, strict=False)):
        if want != got:
            raise ArgumentsChanged(
                f"{path.stem}: activity #{index} {got[0]} was given other arguments than recorded ({want[0]})"
            )
