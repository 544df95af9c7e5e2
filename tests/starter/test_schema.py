"""``tenantflow schema`` prints the JSON Schema of both contracts and of every workflow's input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tenantflow.starter.cli import app

EVERY_INPUT = {
    "TenantContract",
    "WorkerEnrollment",
    "OnboardingInput",
    "ChangeInput",
    "OffboardingInput",
    "EnrollmentInput",
    "RecordsQuery",
    "WorkerRecordQuery",
    "DecommissionInput",
    "LifecycleInput",
    "FleetDriftInput",
    "PlanInput",
}


def test_schema_prints_every_workflow_input() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    schemas = json.loads(result.stdout)
    assert set(schemas) == EVERY_INPUT
    assert schemas["OffboardingInput"]["properties"]["purge_data"]["type"] == "boolean"


def test_schema_out_writes_one_file_per_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["schema", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert {p.name.removesuffix(".schema.json") for p in tmp_path.iterdir()} == EVERY_INPUT
