"""The notifier of a tenant's term: reminders, renewals and expiry POSTed as JSON to a webhook.

The contract is a plain JSON webhook, the way Prometheus Alertmanager's ``webhook_config`` notifies
(https://prometheus.io/docs/alerting/latest/configuration/#webhook_config): ``POST`` to the URL in
``TENANTFLOW_NOTIFY_WEBHOOK_URL`` with ``Content-Type: application/json`` and the :class:`TermNotice` as
the body; any 2xx is delivered. Delivery is at least once (an answer lost after the receiver took the
notice is retried), so every notice carries an ``Idempotency-Key`` header (IETF
draft-ietf-httpapi-idempotency-key-header) that is the same on every retry: a receiver drops repeats by it.
Failures map as every HTTP call's do (:mod:`activities.common.errors`: 429 and 5xx retried, 400/401/403/404/409/422
not). Without a URL a notice is
logged and reported undelivered; the lifecycle keeps going either way.
"""

from __future__ import annotations

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import TRANSIENT, http_error
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.models import runbook
from tenantflow.models.lifecycle import NoticeSent, TermNotice


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
    config = settings()
    if not config.notify_webhook_url:
        activity.logger.warning("no TENANTFLOW_NOTIFY_WEBHOOK_URL: %s %s", notice.event, notice.message)
        return NoticeSent(delivered=False, detail="TENANTFLOW_NOTIFY_WEBHOOK_URL is not set; the notice was logged")
    try:
        answer = httpx.post(
            config.notify_webhook_url,
            content=notice.model_dump_json(),
            headers={"Content-Type": "application/json", "Idempotency-Key": idempotency_key(notice)},
            timeout=config.http_timeout_s,
        )
    except httpx.HTTPError as exc:
        raise ApplicationError(f"notifier webhook unreachable: {exc}", type=TRANSIENT) from None
    if not answer.is_success:
        raise http_error("notifier webhook", answer.status_code, answer.text[:200], answer.headers.get("Retry-After"))
    return NoticeSent(delivered=True, status=answer.status_code)


ACTIVITIES = [reminder_days, notify]
