"""The Weka client against a real HTTPS server on loopback: both shapes the quota list comes in, and TLS verified
against ``WEKA_CA_FILE`` (and refused without it), never switched off.

The server answers as the Weka REST API v2 does (``{"data": ...}`` bodies, ``POST /login`` tokens); the two quota
list shapes are the ones its public clients read: an object keyed by quota id (Backend.AI) and a list (csi-wekafs).
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.weka_client import Credentials, WekaClient
from tenantflow.lab.kubeapi.tls import self_signed

QUOTA_A = {"inode_id": 1001, "path": "/home/alice", "hard_limit_bytes": 100 << 30, "soft_limit_bytes": 90 << 30}
QUOTA_B = {"inode_id": 2002, "path": "/scratch/tenant-x", "hard_limit_bytes": 5 << 40, "soft_limit_bytes": 4 << 40}
SHAPES = {"keyed": {"7": QUOTA_A, "8": QUOTA_B}, "listed": [QUOTA_A, QUOTA_B]}


class _Weka(BaseHTTPRequestHandler):
    def _answer(self, data: Any) -> None:
        body = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer({"access_token": "a", "refresh_token": "r"})

    def do_GET(self) -> None:
        shape = self.path.split("/")[-2]
        self._answer(SHAPES[shape])

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture(scope="module")
def weka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``https://127.0.0.1:<port>`` with a self-signed certificate, and that certificate's PEM file."""
    cert = self_signed("weka-api")
    folder = tmp_path_factory.mktemp("weka-tls")
    pem, key = folder / "ca.pem", folder / "key.pem"
    pem.write_bytes(cert.cert_pem)
    key.write_bytes(cert.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Weka)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", pem
    finally:
        server.shutdown()
        server.server_close()


CREDS = Credentials(username="admin", password=SecretStr("not-a-real-one"), org="Root")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_quotas_are_read_by_inode_in_either_shape(weka: tuple[str, Path], shape: str) -> None:
    url, ca = weka
    with WekaClient(url, CREDS, timeout_s=5, ca_file=str(ca)) as client:
        quotas = client.quotas(shape)
    assert sorted(quotas) == [1001, 2002]
    assert quotas[1001].path == "/home/alice" and quotas[2002].hard_limit_bytes == 5 << 40


def test_an_untrusted_certificate_fails_fast_naming_the_setting_and_a_missing_ca_file_names_the_file(
    weka: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = weka
    with pytest.raises(ApplicationError) as refused, WekaClient(url, CREDS, timeout_s=5) as client:
        client.quotas("listed")
    assert refused.value.non_retryable and "set WEKA_CA_FILE" in refused.value.message, refused.value.message
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(ApplicationError) as bad:
        WekaClient(url, CREDS, timeout_s=5, ca_file=str(missing))
    assert bad.value.non_retryable and str(missing) in bad.value.message, bad.value.message
