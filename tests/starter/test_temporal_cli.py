"""Starting a run from the plain ``temporal`` CLI with a JSON input file, as the README shows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tenantflow.models.onboarding import OnboardingInput
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import binary
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant


async def temporal(api: TenantflowClient, *args: str) -> str:
    address = api.client.service_client.config.target_host
    proc = await asyncio.create_subprocess_exec(
        binary("temporal"), *args, "--address", address, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def query_status(api: TenantflowClient, workflow_id: str) -> Any:
    out = await temporal(api, "workflow", "query", "--workflow-id", workflow_id, "--name", "status", "--output", "json")
    return json.loads(out)["queryResult"][0]


async def test_start_from_temporal_cli_with_input_file(fake_api: TenantflowClient, tmp_path: Path) -> None:
    slug = unique_slug()
    input_file = tmp_path / "onboarding.json"
    input_file.write_text(OnboardingInput(contract=example_tenant(slug)).model_dump_json())
    workflow_id = f"tenant/{slug}"
    await temporal(
        fake_api,
        "workflow",
        "start",
        "--type",
        "TenantOnboarding",
        "--task-queue",
        fake_api.task_queue,
        "--workflow-id",
        workflow_id,
        "--input-file",
        str(input_file),
        "--search-attribute",
        f'TenantSlug="{slug}"',
    )
    deadline = asyncio.get_running_loop().time() + 30
    while (status := await query_status(fake_api, workflow_id))["stage"] != "gate:approve_plan":
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.2)
    assert status["target"] == slug and status["plan_hash"]
    await temporal(
        fake_api,
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        workflow_id,
        "--name",
        "approve_plan",
        "--input",
        json.dumps({"plan_hash": status["plan_hash"], "approver": "script"}),
    )
    result = json.loads(
        await temporal(fake_api, "workflow", "result", "--workflow-id", workflow_id, "--output", "json")
    )
    assert result["result"]["status"] == "completed", result
