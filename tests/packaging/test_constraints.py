"""Installs are reproducible: run.sh and the image install with constraints.txt, which pins every distribution."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.packaging.dockerfile import stages

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def pins() -> dict[str, str]:
    lines = [line for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")]
    bad = [line for line in lines if not PIN.match(line)]
    assert not bad, f"constraints.txt holds only exact pins (name==version): {bad}"
    return {canonicalize_name(m[1]): m[2] for m in (PIN.match(line) for line in lines) if m}


def test_run_sh_installs_with_the_constraints() -> None:
    setup = (ROOT / "run.sh").read_text()
    assert "pip install --quiet --disable-pip-version-check -c constraints.txt uv" in setup
    assert "-c constraints.txt -e '.[lab,dev]'" in setup
    assert '[ constraints.txt -nt "$stamp" ]' in setup, "a regenerated constraints file reinstalls"


def test_the_image_installs_with_the_constraints() -> None:
    builder = stages(ROOT / "Dockerfile")[0]
    assert any("constraints.txt" in args.split() for args in builder.args("COPY"))
    (build,) = builder.args("RUN")
    assert re.search(r"/opt/tenantflow/bin/pip install -c constraints\.txt \S+\.whl\[otel\]", build), build
    allowed = (ROOT / ".dockerignore").read_text().splitlines()
    assert "!constraints.txt" in allowed


def test_every_requirement_of_pyproject_is_pinned_within_its_specifier() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pinned = pins()
    for requirement in map(Requirement, named):
        name = canonicalize_name(requirement.name)
        if name == "tenantflow":
            continue
        assert name in pinned, f"{requirement.name} is not in constraints.txt: run scripts/lock-constraints.sh"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"constraints.txt pins {requirement.name}=={pinned[name]}, outside {requirement.specifier}: "
            "run scripts/lock-constraints.sh"
        )
