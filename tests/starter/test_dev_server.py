"""``tenantflow dev-server`` runs the real Temporal dev server with the UI and the search attributes."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tenantflow.starter.cli import app
from tenantflow.starter.devserver import DevServer, binary, free_port


def test_dev_server_serves_ui_and_registers_search_attributes(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    args = ["dev-server", "--state-dir", str(tmp_path), "--port", str(port), "--ui-port", str(ui_port)]
    started = CliRunner().invoke(app, args)
    assert started.exit_code == 0, started.output
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/", timeout=10) as page:
            assert "<html" in page.read().decode().lower()
        listed = subprocess.run(
            [binary("temporal"), "operator", "search-attribute", "list", "--address", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            check=True,
        )
        for name in ("TenantSlug", "WorkerCluster", "Stage"):
            assert name in listed.stdout
    finally:
        stopped = CliRunner().invoke(app, [*args, "--stop"])
    assert stopped.exit_code == 0 and "stopped" in stopped.output
    assert DevServer(state_dir=tmp_path, port=port).running_pid() is None


@pytest.mark.parametrize("taken", ["--port", "--ui-port"])
def test_a_taken_port_is_one_line_naming_the_port_and_the_fix(tmp_path: Path, taken: str) -> None:
    ports = {"--port": free_port(), "--ui-port": free_port()}
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ports[taken]))
        holder.listen()
        done = subprocess.run(
            [sys.executable, "-m", "tenantflow.starter", "dev-server", "--state-dir", str(tmp_path)]
            + [arg for option, port in ports.items() for arg in (option, str(port))],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {ports[taken]} is taken" in lines[0]
    assert f"({taken} PORT)" in lines[0] and "stop the other server" in lines[0]
    assert DevServer(state_dir=tmp_path, port=ports["--port"]).running_pid() is None
