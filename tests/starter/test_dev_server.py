"""``tenantflow dev-server`` runs the real Temporal dev server with the UI and the search attributes."""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

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
