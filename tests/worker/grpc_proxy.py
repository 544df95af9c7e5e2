"""Debian's nginx as a TLS-terminating gRPC proxy on loopback: mTLS against a test CA and a Bearer API key check.

Started in a temporary directory with its own configuration (single process, no daemon) and stopped by the context
manager; nothing outside that directory is read or written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tenantflow.starter.devserver import free_port, port_open

CONFIG = """\
daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    map $http_authorization $api_key_ok {{
        "Bearer {api_key}" 1;
        default 0;
    }}
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {server_cert};
        ssl_certificate_key {server_key};
        ssl_client_certificate {client_ca};
        ssl_verify_client on;
        location / {{
            if ($api_key_ok = 0) {{
                return 401;
            }}
            grpc_pass grpc://{upstream};
        }}
    }}
}}
"""


@dataclass(frozen=True)
class GrpcProxy:
    """A running proxy: its loopback address and its log."""

    address: str
    error_log: Path


@contextmanager
def grpc_proxy(
    directory: Path, *, upstream: str, server_cert: Path, server_key: Path, client_ca: Path, api_key: str
) -> Iterator[GrpcProxy]:
    """nginx on a free loopback port passing gRPC to ``upstream`` for clients with a ``client_ca`` cert and the key."""
    nginx = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
    if nginx is None:
        raise FileNotFoundError("nginx not found: scripts/install-system-packages.sh installs it (as root)")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = directory / "nginx.conf"
    conf.write_text(
        CONFIG.format(
            dir=directory,
            port=port,
            upstream=upstream,
            server_cert=server_cert,
            server_key=server_key,
            client_ca=client_ca,
            api_key=api_key,
        )
    )
    conf.chmod(0o600)
    log = directory / "error.log"
    proc = subprocess.Popen(
        [nginx, "-p", str(directory), "-c", str(conf), "-e", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while not port_open("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not listen on {port}: {log.read_text() if log.exists() else ''}")
            time.sleep(0.05)
        yield GrpcProxy(f"127.0.0.1:{port}", log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
