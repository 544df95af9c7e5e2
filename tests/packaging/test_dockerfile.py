"""The image's Dockerfile passes hadolint and keeps the rules its header states: multi-stage, a final stage that is
the python slim base plus the product's virtualenv, no compilers or build tools, a non-root user, a health check."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tenantflow.starter.devserver import binary
from tests.packaging.dockerfile import Stage, stages

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
PRODUCT = {"models/", "workflows/", "activities/", "worker/", "starter/"}
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|cc|make|build-essential|apt-get|apt|apk|curl|wget|git|pip3? install)\b")


@pytest.fixture(scope="module")
def final() -> Stage:
    return stages(DOCKERFILE)[-1]


def test_hadolint_finds_nothing() -> None:
    proc = subprocess.run([binary("hadolint"), "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_builder_then_a_slim_final_stage_on_the_same_base(final: Stage) -> None:
    builder, *_ = found = stages(DOCKERFILE)
    assert len(found) == 2 and builder.name == "builder"
    assert final.base == builder.base == "${PYTHON_IMAGE}"
    assert "ARG PYTHON_IMAGE=python:3.11-slim-bookworm" in DOCKERFILE.read_text()


def test_final_stage_copies_only_the_virtualenv_from_the_builder(final: Stage) -> None:
    assert final.args("COPY") == ["--from=builder /opt/tenantflow /opt/tenantflow"]
    assert not final.args("ADD")


def test_final_stage_installs_no_compiler_or_build_tool(final: Stage) -> None:
    for command in final.args("RUN"):
        assert not BUILD_TOOLS.search(command), command
        assert "pip uninstall" in command, "pip, setuptools and wheel leave the final image"


def test_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    user = final.args("USER")[-1]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, user
    instructions = [i.keyword for i in final.instructions]
    assert instructions.index("USER") > max(i for i, k in enumerate(instructions) if k in {"RUN", "COPY"})


def test_health_check_asks_the_workers_livez(final: Stage) -> None:
    (check,) = final.args("HEALTHCHECK")
    assert "/livez" in check and "TENANTFLOW_HEALTH_PORT" in check
    env = " ".join(final.args("ENV"))
    assert "TENANTFLOW_HEALTH_PORT=9465" in env and "TENANTFLOW_METRICS_PORT=9464" in env
    assert final.args("EXPOSE") == ["9464 9465"]
    assert final.args("ENTRYPOINT") == ['["tenantflow"]'] and final.args("CMD") == ['["worker"]']


def test_builder_copies_sources_and_drops_the_lab_from_the_virtualenv() -> None:
    builder = stages(DOCKERFILE)[0]
    copied = {args.split()[0] for args in builder.args("COPY")}
    assert copied == PRODUCT | {"pyproject.toml", "lab/", "bench/"}
    (build,) = builder.args("RUN")
    assert 'rm -r "$site/tenantflow/lab"' in build
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f"/wheels/tenantflow-{version}-py3-none-any.whl[otel]" in build, "this version, with tracing, no other extra"
    assert "[lab" not in build and "[dev" not in build


def test_dockerignore_lets_in_only_what_the_wheel_is_built_from() -> None:
    lines = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "*", "everything is excluded, then the build inputs are let back in"
    allowed = {line[1:] for line in lines if line.startswith("!")}
    assert allowed == PRODUCT | {"pyproject.toml", "README.md", "constraints.txt", "lab/", "bench/"}
