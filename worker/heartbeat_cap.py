"""An upper bound on every activity's heartbeat timeout, set by the worker (``TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S``).

The step catalogue gives every step a heartbeat timeout (:data:`models.step.HEARTBEAT`, one minute), the time
Temporal waits before it retries an attempt whose worker died. A test that SIGKILLs workers on purpose lowers it
with this setting so that each crash costs less than that minute; unset (the default, and what a deployment
runs), the catalogue's timeouts go to Temporal unchanged. :class:`HeartbeatCap` is a worker interceptor that
lowers the heartbeat timeout of each activity a workflow schedules to the bound. The timeout is an attribute of
the ScheduleActivityTask command, which replay does not compare, so a history replays with or without it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.worker import (
    Interceptor,
    StartActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from temporalio.workflow import ActivityHandle


def capped(timeout: timedelta | None, cap: timedelta) -> timedelta | None:
    """``timeout`` lowered to ``cap``; an activity scheduled without a heartbeat timeout keeps none."""
    return None if timeout is None else min(timeout, cap)


class HeartbeatCap(Interceptor):
    """Lower every scheduled activity's heartbeat timeout to ``cap``."""

    def __init__(self, cap: timedelta) -> None:
        self.cap = cap

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        cap = self.cap

        class Outbound(WorkflowOutboundInterceptor):
            def start_activity(self, input: StartActivityInput) -> ActivityHandle[object]:
                input.heartbeat_timeout = capped(input.heartbeat_timeout, cap)
                return super().start_activity(input)

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(Outbound(outbound))

        return Inbound
