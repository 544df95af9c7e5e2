"""LDAP over TLS verifies the outpost's certificate: against a real TLS listener with a self-signed certificate."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import ldap_check
from tenantflow.activities.common.settings import settings
from tenantflow.lab.kubeapi.tls import self_signed


@pytest.fixture
def tls_listener(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``ldaps://127.0.0.1:<port>`` completing TLS handshakes and then closing, and its certificate's PEM file."""
    cert = self_signed("ldap-outpost")
    pem = tmp_path / "ca.pem"
    pem.write_bytes(cert.cert_pem)
    context = cert.server_context()
    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with contextlib.suppress(OSError, ssl.SSLError), context.wrap_socket(conn, server_side=True):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"ldaps://127.0.0.1:{sock.getsockname()[1]}", pem
    finally:
        stop.set()
        thread.join()
        sock.close()


def _probe_error(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> ApplicationError:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings.cache_clear()
    try:
        with pytest.raises(ApplicationError) as caught:
            ldap_check.probe()
        return caught.value
    finally:
        settings.cache_clear()


def test_an_untrusted_certificate_fails_fast_naming_the_fix(
    tls_listener: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = tls_listener
    error = _probe_error(monkeypatch, {"LDAP_URL": url})
    assert error.type == "TlsVerifyFailed" and error.non_retryable, error
    assert "LDAP_CA_FILE" in error.message


def test_the_configured_ca_is_trusted(tls_listener: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, pem = tls_listener
    error = _probe_error(monkeypatch, {"LDAP_URL": url, "LDAP_CA_FILE": str(pem)})
    assert error.type == "Unavailable", error


def test_insecure_is_explicit_and_reported(tls_listener: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = tls_listener
    error = _probe_error(monkeypatch, {"LDAP_URL": url, "LDAP_TLS_INSECURE": "true"})
    assert error.type == "Unavailable", error
    settings.cache_clear()
    [finding] = ldap_check.tls_findings()
    assert finding.severity == "warning" and "NOT verified" in finding.message
    monkeypatch.delenv("LDAP_TLS_INSECURE")
    settings.cache_clear()
    assert ldap_check.tls_findings() == []
