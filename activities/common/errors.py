"""Turning client errors into Temporal errors: retry what may pass, fail fast on what will not.

403, 404 on a required object, 409 on a conflict that is not ours, 422 and
validation errors are non-retryable and keep the API's own message; 429 and 5xx
are retried, honouring ``Retry-After`` through ``next_retry_delay``.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

TRANSIENT = "Unavailable"
"""The type of a retryable HTTP failure (429, 5xx, no answer): a preflight re-raises it rather than report it."""
NON_RETRYABLE_STATUS = {
    400: "Invalid",
    401: "Forbidden",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    422: "Invalid",
}


def transient(error: Exception) -> bool:
    """Whether ``error`` is a dependency's transient answer (:data:`TRANSIENT`: a 429, a 5xx, a lost connection),
    which a preflight re-raises and a poll may take as a try without news
    (:func:`activities.common.polling.poll_until`'s ``tolerate``)."""
    return isinstance(error, ApplicationError) and error.type == TRANSIENT


def retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def http_error(service: str, status: int, message: str, retry_after: str | None = None) -> ApplicationError:
    """An ApplicationError for an HTTP failure of ``service``."""
    text = f"{service} answered HTTP {status}: {message}"
    if status in NON_RETRYABLE_STATUS:
        return ApplicationError(text, type=NON_RETRYABLE_STATUS[status], non_retryable=True)
    delay = retry_after_seconds(retry_after)
    return ApplicationError(
        text, type=TRANSIENT, next_retry_delay=timedelta(seconds=delay) if delay is not None else None
    )


def fail(kind: str, message: str) -> ApplicationError:
    """A non-retryable failure of the given type (``PreflightFailed``, ``Conflict``...)."""
    return ApplicationError(message, type=kind, non_retryable=True)
