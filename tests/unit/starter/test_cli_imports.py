"""What the ``tenantflow`` CLI loads: a command that reads no cluster pays for no Kubernetes client, HTTP server or
structured logging (the CLI runs once per operator command, and the tests run it hundreds of times)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import kubernetes.utils.quantity

from tenantflow.models.units import parse_quantity

HEAVY = ("aiohttp", "kubernetes", "structlog")


def test_the_cli_entry_point_loads_no_kubernetes_client_http_server_or_structlog() -> None:
    probe = (
        "import json, sys; import tenantflow.starter.cli; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {list(HEAVY)!r})))"
    )
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    assert loaded == []


def test_sizes_are_parsed_by_the_kubernetes_clients_own_quantity_parser() -> None:
    assert inspect.getsourcefile(parse_quantity) == inspect.getsourcefile(kubernetes.utils.quantity)
    assert parse_quantity("1.5Gi") == kubernetes.utils.quantity.parse_quantity("1.5Gi") == 1610612736
