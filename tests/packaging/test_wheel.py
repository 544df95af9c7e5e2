"""The wheel installs one import package, ``tenantflow``: the top-level folders as ``tenantflow.<folder>``,
every module and every data file of the lab, and the CLI's entry points. Nothing generic (``models``,
``lab`` ...) at the top of site-packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("models", "workflows", "activities", "worker", "starter", "lab", "bench")


def source_files(folder: str) -> set[str]:
    """Every file of ``folder`` a wheel must carry (byte code caches aside), by its path in the repo."""
    return {
        str(p.relative_to(REPO))
        for p in (REPO / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def build_wheel(tmp_path: Path) -> Path:
    """``pip wheel .`` of a copy of the project (the build writes build/ and egg-info beside the sources)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(src)],
        check=True,
        timeout=240,
    )
    [wheel] = out.glob("tenantflow-*.whl")
    return wheel


def test_the_wheel_holds_every_folder_under_tenantflow_and_nothing_else_at_the_top(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_wheel(tmp_path)) as wheel:
        names = set(wheel.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
        top_level = wheel.read(f"{dist_info}/top_level.txt").decode().split()

    assert {name.split("/")[0] for name in names} == {"tenantflow", dist_info}
    assert top_level == ["tenantflow"]
    expected = {f"tenantflow/{path}" for folder in FOLDERS for path in source_files(folder)}
    assert not expected - names, sorted(expected - names)
    lab_data = {n for n in names if n.startswith("tenantflow/lab/") and not n.endswith(".py")}
    assert {
        "tenantflow/lab/bin/nvidia-smi",
        "tenantflow/lab/bin/df",
        "tenantflow/lab/bin/all_reduce_perf",
        "tenantflow/lab/authentik/schema.yaml",
    } <= lab_data
    assert any(n.endswith(".yaml") and "/crds" in n for n in lab_data)
    assert "tenantflow = tenantflow.starter.cli:app" in entry_points
    assert "bench = tenantflow.bench.cli:bench" in entry_points
