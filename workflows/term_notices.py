"""The notices of a tenant's term (``TenantLifecycle``): when reminders are due, and a notice sent to the notifier.

:func:`past_reminders` and :func:`days_left` are the term's day arithmetic (pure); :func:`term_notice` makes the
notice of this run at the workflow's now, and :func:`send_notice` sends it through the notifier
(``lifecycle.notify``): a notice that is not delivered is logged, and never fails the term.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import NoticeKind, TermNotice
    from tenantflow.models.runbook import NOTIFY

from tenantflow.workflows.steps import StepTracker


def days_left(term_end: datetime, now: datetime) -> int:
    """Whole days from ``now`` to ``term_end``, rounded up (0 once it has passed)."""
    return max(0, math.ceil((term_end - now) / timedelta(days=1)))


def past_reminders(term_end: datetime, reminder_days: list[int], now: datetime) -> list[int]:
    """The reminders whose time has already come for ``term_end``: a new or renewed term skips them."""
    return [day for day in reminder_days if term_end - timedelta(days=day) <= now]


def term_notice(kind: NoticeKind, tenant: str, term_end: datetime, message: str) -> TermNotice:
    """The notice ``kind`` of this run about the term of ``tenant`` ending at ``term_end``, saying ``message``."""
    return TermNotice(
        event=kind,
        tenant=tenant,
        workflow_id=workflow.info().workflow_id,
        term_end=term_end,
        days_left=days_left(term_end, workflow.now()),
        message=message,
    )


async def send_notice(steps: StepTracker, notice: TermNotice) -> None:
    """Send ``notice`` through the notifier as a step of ``steps``; one not delivered is logged, not raised."""
    try:
        sent = await steps.run(NOTIFY, notice, summary=f"notify: {notice.event}")
    except ActivityError as err:
        workflow.logger.warning("term notice %s was not delivered: %s", notice.event, err.cause or err)
        return
    if not sent.delivered:
        workflow.logger.warning("term notice %s was not delivered: %s", notice.event, sent.detail)
