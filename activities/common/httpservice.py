"""The base of the JSON HTTP service clients (Authentik, Weka): one session, its failures as Temporal errors.

An :class:`HttpService` owns one ``httpx.Client`` under the API's base URL with the configured timeout, is used
as a context manager, sends every request through :func:`activities.common.httpretry.send` (transient read
failures retried in place), turns a request that did not complete into a retryable 503 and an error response
into :func:`activities.common.errors.http_error` (400/403/404 fail fast, 429 and 5xx retry honouring
``Retry-After``), with the service's own error text (:meth:`HttpService.explain`). Credentials live in headers
and never appear in a message.
"""

from __future__ import annotations

from typing import Any, Self

import httpx
from pydantic import BaseModel, ConfigDict

from tenantflow.activities.common.errors import http_error
from tenantflow.activities.common.httpretry import send


class ApiModel(BaseModel):
    """An object a service returns, with only the fields tenantflow reads (the others are ignored)."""

    model_config = ConfigDict(extra="ignore")


class HttpService:
    """One API session; subclasses add the service's calls and its :meth:`explain`."""

    service = "http"
    """How errors name the service (``authentik``, ``weka``)."""

    def __init__(self, base_url: str, timeout_s: float, headers: dict[str, str]) -> None:
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout_s, headers={"Accept": "application/json", **headers}
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @staticmethod
    def explain(body: Any) -> str:
        """The service's explanation in a JSON error body (the whole body by default)."""
        return str(body)

    @classmethod
    def error_text(cls, response: httpx.Response) -> str:
        """At most 500 characters explaining an error response: :meth:`explain` of a JSON body, else its text."""
        try:
            body = response.json()
        except ValueError:
            return response.text[:500] or response.reason_phrase
        return cls.explain(body)[:500]

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return send(self._http, method, path, **kwargs)
        except httpx.TransportError as exc:
            raise http_error(self.service, 503, f"{method} {path} did not complete: {type(exc).__name__}") from None

    def _check(self, method: str, path: str, response: httpx.Response) -> None:
        """Raise the Temporal error of an error response; nothing for a success."""
        if response.status_code >= 400:
            raise http_error(
                self.service,
                response.status_code,
                f"{method} {path}: {self.error_text(response)}",
                response.headers.get("Retry-After"),
            )
