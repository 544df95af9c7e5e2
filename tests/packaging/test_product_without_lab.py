"""The image leaves the lab out of its virtualenv (Dockerfile): the worker and the CLI must import without it.
Simulated in this venv by making ``tenantflow.lab`` unimportable."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import tenantflow.activities
import tenantflow.models
import tenantflow.worker
import tenantflow.workflows

ENTRY_POINTS = ["tenantflow.starter.cli", "tenantflow.starter.client", "tenantflow.starter.http_api"]


def product_modules() -> list[str]:
    names = list(ENTRY_POINTS)
    for package in (tenantflow.models, tenantflow.workflows, tenantflow.activities, tenantflow.worker):
        names += [
            info.name
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
            if not info.name.endswith(".__main__")
        ]
    return names


def test_worker_and_cli_import_without_the_lab() -> None:
    script = (
        "import importlib, sys\n"
        "sys.modules['tenantflow.lab'] = None\n"
        f"for name in {product_modules()!r}:\n"
        "    importlib.import_module(name)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_simulation_does_hide_the_lab() -> None:
    script = "import sys\nsys.modules['tenantflow.lab'] = None\nimport tenantflow.lab.endpoints\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr
