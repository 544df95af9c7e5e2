"""What a run's history says: when a stage was entered, how many events, gate latency, when each activity ran.

Everything here reads server-side event times, so the figures do not depend on
how quickly the bench process notices things. A local activity has no events of
its own: the SDK core records it with a ``core_local_activity`` marker whose
``data`` detail names its activity type and attempt (what the Temporal UI shows
for it), written when the workflow task that ran it completes; its span is that
workflow task, shared by every local activity the task ran.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle

from tenantflow.workflows.search import STAGE

CLOSE_EVENTS = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)


class RunEndedError(RuntimeError):
    """The run closed before reaching the stage the bench waited for."""


class ActivitySpan(BaseModel):
    """One activity attempt sequence: its type and when it started and closed (epoch seconds, server clock)."""

    name: str
    started: float
    ended: float
    attempt: int = 1
    """The attempt that closed it (1: it finished on its first attempt)."""
    local: bool = False
    """A local activity: its span is the workflow task that ran it."""

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def stage_set(event: HistoryEvent) -> str | None:
    """The ``Stage`` search attribute value an upsert event sets, if it sets one."""
    if event.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        return None
    fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    if STAGE.name not in fields:
        return None
    value: Any = json.loads(fields[STAGE.name].data)
    return str(value)


async def wait_for_stage(handle: WorkflowHandle[Any, Any], stage: str) -> None:
    """Follow the history (server long poll, no queries to the worker) until ``stage`` is entered."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if stage_set(event) == stage:
            return
        if event.event_type in CLOSE_EVENTS:
            raise RunEndedError(f"{handle.id} ended before stage {stage}")
    raise RunEndedError(f"{handle.id} ended before stage {stage}")


def seconds(event: HistoryEvent) -> float:
    return float(event.event_time.ToNanoseconds()) / 1e9


def gate_latency(events: Sequence[HistoryEvent]) -> float | None:
    """Seconds from the accepted ``approve_plan`` update to the start of the next activity."""
    accepted = None
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = seconds(event)
        elif accepted is not None and event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            return seconds(event) - accepted
    return None


LOCAL_ACTIVITY_MARKER = "core_local_activity"


def local_activity(event: HistoryEvent) -> tuple[str, int] | None:
    """The activity type and attempt of the local activity this marker event records, else None."""
    if event.event_type != EventType.EVENT_TYPE_MARKER_RECORDED:
        return None
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != LOCAL_ACTIVITY_MARKER:
        return None
    data = json.loads(marker.details["data"].payloads[0].data)
    return str(data["activity_type"]), int(data["attempt"])


def activity_spans(events: Sequence[HistoryEvent]) -> list[ActivitySpan]:
    """Every activity of the run with its last start, its close and that attempt's number, in scheduling order
    (a local activity in the order its workflow task recorded it)."""
    names: dict[int, str] = {}
    started: dict[int, float] = {}
    attempts: dict[int, int] = {}
    spans: list[ActivitySpan] = []
    task_started = 0.0
    for event in events:
        kind = event.event_type
        local = local_activity(event)
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started = seconds(event)
        elif local is not None:
            name, attempt = local
            spans.append(
                ActivitySpan(name=name, started=task_started, ended=seconds(event), attempt=attempt, local=True)
            )
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            names[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attributes = event.activity_task_started_event_attributes
            started[attributes.scheduled_event_id] = seconds(event)
            attempts[attributes.scheduled_event_id] = attributes.attempt
        else:
            scheduled = closed_activity(event)
            if scheduled is not None and scheduled in started:
                spans.append(
                    ActivitySpan(
                        name=names[scheduled],
                        started=started[scheduled],
                        ended=seconds(event),
                        attempt=attempts[scheduled],
                    )
                )
    return spans


def closed_activity(event: HistoryEvent) -> int | None:
    """The scheduled event id of the activity a completed/failed/timed-out/canceled event closes."""
    for attributes in (
        "activity_task_completed_event_attributes",
        "activity_task_failed_event_attributes",
        "activity_task_timed_out_event_attributes",
        "activity_task_canceled_event_attributes",
    ):
        if event.HasField(attributes):
            scheduled: int = getattr(event, attributes).scheduled_event_id
            return scheduled
    return None
