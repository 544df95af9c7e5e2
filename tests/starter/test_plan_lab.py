"""``tenantflow plan`` against the lab: the worker plans (``TenantPlan``), the CLI prints every object on one line of
80 columns, and not one write reaches any stand-in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.plan import Plan
from tenantflow.models.runbook import PLAN
from tenantflow.starter.client import TenantflowClient
from tests.labfixture import journal_writes, lab_worker, reset_journals
from tests.starter.conftest import CLI, only_temporal_env
from tests.starter.plan_screen import assert_one_line_per_object
from tests.workflows.contract import EXAMPLES


async def plan(api: TenantflowClient, contract: Path, *args: str) -> tuple[int, str, str]:
    """The CLI's plan of ``contract`` in an 80-column terminal, with only the Temporal settings of ``api`` (the lab's
    settings are the worker's alone)."""
    proc = await asyncio.create_subprocess_exec(
        CLI,
        "plan",
        str(contract),
        *args,
        env=only_temporal_env(api) | {"COLUMNS": "80"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_plan_shows_every_object_on_one_line_and_writes_nothing(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = EXAMPLES / "tenant-foo.yaml"
    async with lab_worker(dev_env.client, lab) as api:
        reset_journals(lab)
        code, out, err = await plan(api, contract, "--output", "json")
        assert code == 0, err
        report = json.loads(out)
        assert report["ok"] and report["plan_hash"]
        steps = report["plan"]["steps"]
        assert {s["layer"] for s in steps} == {s.layer for s in PLAN}
        kinds = {(s["layer"], s["kind"], s["name"]) for s in steps}
        assert ("kube", "Namespace", "tenant-foo") in kinds
        assert ("capacity", "Reservation", "tenant-foo-reservation") in kinds
        assert {("identity", "User", user) for user in ("alice", "bob", "carol")} <= kinds

        code, text, err = await plan(api, contract)
        assert code == 0, err
        assert_one_line_per_object(text, Plan.model_validate(report["plan"]), 80)
        assert f"plan hash {report['plan_hash']}" in text and "Nothing was written" in text
        code, wide, err = await plan(api, contract, "--wide")
        assert code == 0, err
        assert f"\n    nodes={','.join(report['nodes'])}\n" in wide and len(report["nodes"]) == 8
        assert set(journal_writes(lab).values()) == {0}, journal_writes(lab)


async def test_plan_exits_3_on_preflight_errors(
    dev_env: WorkflowEnvironment, lab: LabEndpoints, tmp_path: Path
) -> None:
    contract = (EXAMPLES / "tenant-foo.yaml").read_text().replace("gpus: 64", "gpus: 640")
    (tmp_path / "big.yaml").write_text(contract)
    async with lab_worker(dev_env.client, lab) as api:
        code, out, err = await plan(api, tmp_path / "big.yaml")
    assert code == 3, out + err
    assert "preflight failed" in err
