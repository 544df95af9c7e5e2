"""``tenantflow plan`` against the lab: every object on one line of 80 columns, and not one write to any stand-in."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.plan import Plan
from tenantflow.models.runbook import PLAN
from tests.labfixture import journal_writes, reset_journals
from tests.starter.conftest import CLI
from tests.starter.plan_screen import assert_one_line_per_object
from tests.workflows.contract import EXAMPLES


def plan(lab_env: LabEndpoints, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TENANTFLOW_ENV_FILE": str(lab_env.state_dir / "lab.env"), "COLUMNS": "80"}
    return subprocess.run(
        [CLI, "plan", str(EXAMPLES / "tenant-foo.yaml"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_plan_shows_every_object_on_one_line_and_writes_nothing(lab: LabEndpoints) -> None:
    reset_journals(lab)
    done = plan(lab, "--output", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["plan_hash"]
    steps = report["plan"]["steps"]
    assert {s["layer"] for s in steps} == {s.layer for s in PLAN}
    kinds = {(s["layer"], s["kind"], s["name"]) for s in steps}
    assert ("kube", "Namespace", "tenant-foo") in kinds
    assert ("capacity", "Reservation", "tenant-foo-reservation") in kinds
    assert {("identity", "User", user) for user in ("alice", "bob", "carol")} <= kinds

    text = plan(lab)
    assert text.returncode == 0, text.stderr
    assert_one_line_per_object(text.stdout, Plan.model_validate(report["plan"]), 80)
    assert f"plan hash {report['plan_hash']}" in text.stdout and "Nothing was written" in text.stdout
    wide = plan(lab, "--wide")
    assert wide.returncode == 0, wide.stderr
    assert f"\n    nodes={','.join(report['nodes'])}\n" in wide.stdout and len(report["nodes"]) == 8
    assert set(journal_writes(lab).values()) == {0}, journal_writes(lab)


def test_plan_exits_3_on_preflight_errors(lab: LabEndpoints, tmp_path: Path) -> None:
    contract = (EXAMPLES / "tenant-foo.yaml").read_text().replace("gpus: 64", "gpus: 640")
    (tmp_path / "big.yaml").write_text(contract)
    env = {**os.environ, "TENANTFLOW_ENV_FILE": str(lab.state_dir / "lab.env")}
    done = subprocess.run(
        [CLI, "plan", str(tmp_path / "big.yaml")], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "preflight failed" in done.stderr
