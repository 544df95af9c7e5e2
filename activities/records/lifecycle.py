"""The notifier of a tenant's term: reminders, renewals and expiry POSTed as JSON to a webhook.

The contract is a plain JSON webhook, the way Prometheus Alertmanager's ``webhook_config`` notifies
(https://prometheus.io/docs/alerting/latest/configuration/#webhook_config): ``POST`` to the URL in
``TENANTFLOW_NOTIFY_WEBHOOK_URL`` with ``Content-Type: application/json`` and the :class:`TermNotice` as
the body; any 2xx is delivered. Delivery is at least once (an answer lost after the receiver took the
notice is retried), so every notice carries an ``Idempotency-Key`` header (IETF
draft-ietf-httpapi-idempotency-key-header) that is the same on every retry: a receiver drops repeats by it.
Failures map as every HTTP call's do (:mod:`activities.common.errors`: 429 and 5xx retried, 400/401/403/404/409/422
not); the posting is :mod:`activities.common.webhook`'s, shared with the gate notifications
(:mod:`activities.records.gate_notify`). Without a URL a notice is logged and reported undelivered; the lifecycle
keeps going either way.

At expiry ``lifecycle.wait_tenant_run`` waits (heartbeating, at most the input's bound) while the tenant's
onboarding or change (``tenant/<slug>``) runs, asking Temporal through the worker's own client, so that the
offboarding starts from the record that run writes.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.webhook import NO_WEBHOOK, post_notice
from tenantflow.models import runbook
from tenantflow.models.lifecycle import NoticeSent, TenantRunSeen, TenantRunWait, TermNotice

RUN_POLL_S = 1.0
"""How often ``lifecycle.wait_tenant_run`` asks whether the tenant's run still runs."""


def idempotency_key(notice: TermNotice) -> str:
    """The same for every delivery attempt of one notice, different for every other notice."""
    return f"{notice.workflow_id}/{notice.event}/{notice.term_end.isoformat()}/{notice.days_left}"


@defn(runbook.REMINDER_DAYS)
def reminder_days(tenant: str) -> list[int]:
    """Days before a term's end that reminders go out, from ``TENANTFLOW_TERM_REMINDER_DAYS``."""
    return list(settings().term_reminder_days)


@defn(runbook.NOTIFY)
def notify(notice: TermNotice) -> NoticeSent:
    """POST ``notice`` to the webhook; undelivered (and logged) when no webhook is configured."""
    sent = post_notice(notice.model_dump_json(), idempotency_key(notice))
    if not sent.delivered:
        activity.logger.warning("no TENANTFLOW_NOTIFY_WEBHOOK_URL: %s %s", notice.event, notice.message)
        return NoticeSent(delivered=False, detail=f"{NO_WEBHOOK}; the notice was logged")
    return sent


@defn(runbook.WAIT_TENANT_RUN)
async def wait_tenant_run(wait: TenantRunWait) -> TenantRunSeen:
    """Wait while the run ``wait.workflow_id`` runs, at most ``wait.wait_s`` seconds; what was seen (no such run:
    nothing to wait for)."""
    handle = activity.client().get_workflow_handle(wait.workflow_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait.wait_s
    waited = False
    while True:
        try:
            described = await handle.describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return TenantRunSeen(workflow_id=wait.workflow_id, waited=waited)
            raise ApplicationError(f"could not describe {wait.workflow_id}: {err.message}", type=TRANSIENT) from None
        running = described.status == WorkflowExecutionStatus.RUNNING
        if not running or loop.time() >= deadline:
            seen = {"waited": waited, "running": running, "workflow_type": described.workflow_type}
            return TenantRunSeen(workflow_id=wait.workflow_id, **seen)
        waited = True
        activity.heartbeat(f"{wait.workflow_id} ({described.workflow_type}) is running")
        await asyncio.sleep(min(RUN_POLL_S, max(0.0, deadline - loop.time())))


ACTIVITIES = [reminder_days, notify, wait_tenant_run]
