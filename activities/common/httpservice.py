"""The base of the JSON HTTP service clients (Authentik, Weka): one session, its failures as Temporal errors.

An :class:`HttpService` owns one ``httpx.Client`` under the API's base URL with the configured timeout, is used
as a context manager, sends every request through :func:`activities.common.httpretry.send` (transient read
failures retried in place), turns a request that did not complete into a retryable 503 and an error response
into :func:`activities.common.errors.http_error` (400/403/404 fail fast, 429 and 5xx retry honouring
``Retry-After``), with the service's own error text (:meth:`HttpService.explain`). Credentials live in headers
and never appear in a message. TLS is verified against httpx's default trust, or only against ``ca_file`` (a PEM
bundle, as ``AUTHENTIK_CA_FILE``/``WEKA_CA_FILE`` name it) when given; verification is never switched off.
The TLS context is built once per trust and shared by every session of the worker (loading a CA bundle costs
more CPU than most calls; ``ssl.SSLContext`` is safe to share between connections, and httpx takes one as
``verify``: https://www.python-httpx.org/advanced/ssl/); a CA file is read again when it changes on disk.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any, Self

import httpx
from pydantic import BaseModel, ConfigDict

from tenantflow.activities.common.errors import fail, http_error
from tenantflow.activities.common.httpretry import send
from tenantflow.models.content_types import JSON


@functools.cache
def _default_trust() -> ssl.SSLContext:
    return httpx.create_ssl_context()


@functools.lru_cache(maxsize=8)
def _file_trust(ca_file: str, _stamp: tuple[int, int]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file)


def trust(ca_file: str | None) -> ssl.SSLContext:
    """TLS verification: httpx's default trust, or a context that trusts only the CAs in ``ca_file`` (built again
    when the file's modification time or size changed). A missing or unreadable file is a non-retryable error
    naming the file, raised before any request."""
    if ca_file is None:
        return _default_trust()
    try:
        info = os.stat(ca_file)
        return _file_trust(ca_file, (info.st_mtime_ns, info.st_size))
    except (OSError, ssl.SSLError) as exc:
        raise fail("Invalid", f"CA file {ca_file!r} cannot be used ({exc}); set it to a PEM bundle") from None


def _untrusted(exc: BaseException) -> bool:
    """Whether a failed request failed on verifying the server's certificate (not retried: it will not change)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class ApiModel(BaseModel):
    """An object a service returns, with only the fields tenantflow reads (the others are ignored)."""

    model_config = ConfigDict(extra="ignore")


class HttpService:
    """One API session; subclasses add the service's calls and its :meth:`explain`."""

    service = "http"
    """How errors name the service (``authentik``, ``weka``)."""
    ca_setting = "the service's CA file setting"
    """The setting an untrusted certificate's error names (``AUTHENTIK_CA_FILE``, ``WEKA_CA_FILE``)."""

    def __init__(self, base_url: str, timeout_s: float, headers: dict[str, str], ca_file: str | None = None) -> None:
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout_s,
            headers={"Accept": JSON, **headers},
            verify=trust(ca_file),
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
            if _untrusted(exc):
                raise fail(
                    "Forbidden",
                    f"{self.service}: the server's TLS certificate is not trusted ({exc}); set {self.ca_setting} "
                    "to the PEM bundle of the CA that signed it",
                ) from None
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
