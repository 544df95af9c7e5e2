"""Posting one JSON notice to the notifier webhook (``TENANTFLOW_NOTIFY_WEBHOOK_URL``): the term notices' and the
gate notifications' delivery.

``POST`` with ``Content-Type: application/json`` and an ``Idempotency-Key`` header (IETF
draft-ietf-httpapi-idempotency-key-header) that the caller keeps the same on every retry of one notice, so a
receiver drops repeats by it; any 2xx is delivered. Failures map as every HTTP call's do
(:mod:`activities.common.errors`: no answer, 429 and 5xx retried; 400/401/403/404/409/422 not).

The URL may hold a token (a Slack incoming webhook's path is its secret), so an error names only the exception's
type or the answer's status: never the URL, the exception's text (which httpx writes with the URL) or the answer's
body (a receiver or proxy may echo the request path); errors reach the history and the log.
"""

from __future__ import annotations

import httpx
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import TRANSIENT, http_error
from tenantflow.activities.common.settings import settings
from tenantflow.models.content_types import JSON
from tenantflow.models.lifecycle import NoticeSent

NO_WEBHOOK = "TENANTFLOW_NOTIFY_WEBHOOK_URL is not set"
"""Why a notice was not delivered when the worker has no webhook."""


def post_notice(body: str, idempotency_key: str) -> NoticeSent:
    """POST the JSON ``body`` to the configured webhook; undelivered (``detail``: :data:`NO_WEBHOOK`) without one."""
    config = settings()
    if not config.notify_webhook_url:
        return NoticeSent(delivered=False, detail=NO_WEBHOOK)
    try:
        answer = httpx.post(
            config.notify_webhook_url,
            content=body,
            headers={"Content-Type": JSON, "Idempotency-Key": idempotency_key},
            timeout=config.http_timeout_s,
        )
    except httpx.HTTPError as exc:
        raise ApplicationError(f"notifier webhook unreachable: {type(exc).__name__}", type=TRANSIENT) from None
    if not answer.is_success:
        raise http_error("notifier webhook", answer.status_code, "body not recorded", answer.headers.get("Retry-After"))
    return NoticeSent(delivered=True, status=answer.status_code)
