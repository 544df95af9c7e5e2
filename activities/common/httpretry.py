"""Retrying idempotent reads in place: a 429, a 5xx or a dropped connection on a GET is tried again a few times
inside the same activity attempt (honouring ``Retry-After``) before the failure goes to the activity's retry policy.

Without this, one activity that makes many reads fails whole as soon as any single read hits a transient fault,
so a dependency failing a modest share of its requests exhausts the step's attempts. A write is retried here
only on a 429: the server throttled it before doing anything (Kubernetes API Priority and Fairness rejects a
request with 429 and ``Retry-After`` before executing it, https://kubernetes.io/docs/concepts/cluster-administration/flow-control/,
and client-go retries any verb on it; RFC 6585 defines 429 as a refusal). Any other failure of a write goes to the
activity: a write whose answer was lost may have happened, and only the activity (which reads before it writes)
can tell. A ``Retry-After`` longer than :data:`MAX_IN_PLACE_WAIT_S` is left to the activity retry, which honours it
through ``next_retry_delay``. Retrying in place stops as soon as another try (its wait plus the client's read
timeout) could end after :data:`IN_PLACE_BUDGET_S`, so one call never holds an activity thread past its 60 s
heartbeat timeout: the failure then goes to the activity's retry policy, which heartbeats between attempts.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from urllib3.util.retry import Retry

from tenantflow.activities.common.errors import retry_after_seconds

READ_METHODS = frozenset({"GET", "HEAD"})
THROTTLED = 429
TRANSIENT_STATUS = frozenset({THROTTLED, 500, 502, 503, 504})
READ_ATTEMPTS = 4
BACKOFF_S = 0.2
MAX_IN_PLACE_WAIT_S = 10.0
IN_PLACE_BUDGET_S = 45.0
"""The longest one :func:`send` may take, tries and waits included (below the 60 s heartbeat timeout)."""


def in_place_wait_s(attempt: int, retry_after: str | None) -> float | None:
    """Seconds to wait before the next try, or None when the server asks for longer than we wait in place."""
    asked = retry_after_seconds(retry_after)
    if asked is None:
        return BACKOFF_S * 2**attempt
    return asked if asked <= MAX_IN_PLACE_WAIT_S else None


def _fits(http: httpx.Client, started: float, wait: float) -> bool:
    """Whether waiting ``wait`` and one more try (up to the client's timeouts) ends within the budget."""
    timeout = http.timeout
    longest = sum(t or IN_PLACE_BUDGET_S for t in (timeout.connect, timeout.read))
    return time.monotonic() - started + wait + longest <= IN_PLACE_BUDGET_S


def retried_in_place(method: str, status: int) -> bool:
    """A read on any transient status; a write only when it was throttled (never executed)."""
    return status in TRANSIENT_STATUS if method.upper() in READ_METHODS else status == THROTTLED


def send(http: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """``http.request``; a read is retried in place on a transient answer or transport error, a write on a 429,
    within :data:`IN_PLACE_BUDGET_S`."""
    read = method.upper() in READ_METHODS
    started = time.monotonic()
    for attempt in range(1, READ_ATTEMPTS):
        try:
            response = http.request(method, path, **kwargs)
        except httpx.TransportError:
            if not read or not _fits(http, started, BACKOFF_S * 2**attempt):
                raise
            time.sleep(BACKOFF_S * 2**attempt)
            continue
        if not retried_in_place(method, response.status_code):
            return response
        wait = in_place_wait_s(attempt, response.headers.get("Retry-After"))
        if wait is None or not _fits(http, started, wait):
            return response
        time.sleep(wait)
    return http.request(method, path, **kwargs)


class KubeRetry(Retry):
    """urllib3's policy for reads (transient statuses and dropped connections), plus a throttled write that the
    apiserver answered 429 with ``Retry-After`` (Priority and Fairness rejected it unexecuted)."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code == THROTTLED and has_retry_after and self.total:
            return True
        return bool(super().is_retry(method, status_code, has_retry_after))


def kube_retries() -> Retry:
    """The same policy for the kubernetes client's urllib3 pool; the last answer is returned (not raised) so the
    status and ``Retry-After`` reach :func:`activities.common.errors.http_error`."""
    return KubeRetry(
        total=READ_ATTEMPTS - 1,
        backoff_factor=BACKOFF_S,
        status_forcelist=TRANSIENT_STATUS,
        allowed_methods=READ_METHODS,
        respect_retry_after_header=True,
        raise_on_status=False,
        raise_on_redirect=False,
    )
