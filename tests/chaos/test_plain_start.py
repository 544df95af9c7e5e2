"""Two starts of one tenant from two clients, one through plain ``temporal workflow start``: exactly one runs.

tenantflow's client starts a small tenant's onboarding, which holds the tenant (``workflows/tenant_hold.py``) and
waits at its plan gate; then a plain Temporal CLI user starts the same tenant's offboarding, which no tenantflow
client checks. The input is the JSON of ``OffboardingInput`` as ``--input`` (the CLI's ``json/plain`` payload): the
rig's worker, like a deployment without ``TENANTFLOW_CODEC_KEYS``, reads plaintext payloads; a deployment with
encryption refuses plaintext, so its CLI users start through the codec server (``--codec-endpoint``), which is
then what this start would carry. The offboarding ends before any activity with ``TenantHeld`` naming the
onboarding; the onboarding is approved and completes, the tenant whole; then it is offboarded with purge and the
world is the one before (deactivated user records aside), nothing foreign touched.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.run_ids import offboarding_id
from tenantflow.starter.devserver import DevServer, binary
from tests.chaos.conftest import Baseline, Rig, approve_and_wait, small_tenant
from tests.chaos.kit import STATS
from tests.chaos.racing import Before, free_nodes, tally
from tests.integration.runs import offboard
from tests.integration.world import world_snapshot
from tests.workflows.harness import wait_for_stage


def cli_start(server: DevServer, queue: str, workflow_type: str, workflow_id: str, arg: OffboardingInput) -> str:
    """Start ``workflow_type`` as ``workflow_id`` with the real ``temporal`` CLI and ``arg`` as JSON input
    (https://docs.temporal.io/cli/workflow#start); what it printed."""
    done = subprocess.run(
        [
            binary("temporal"),
            "workflow",
            "start",
            "--address",
            server.address,
            "--task-queue",
            queue,
            "--type",
            workflow_type,
            "--workflow-id",
            workflow_id,
            "--input",
            json.dumps(arg.model_dump(mode="json")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_plain_cli_start_beside_a_client_start_leaves_one_run(
    rig: Rig, chaos_lab: LabEndpoints, chaos_server: DevServer, baseline: Baseline
) -> None:
    scenario = STATS.scenario("two starts of one tenant, one by plain temporal CLI")
    assert baseline.end[0] == "completed"
    api = rig.api
    contract = small_tenant(chaos_lab, "tenant-pc", ("plaincli-1", "plaincli-2"), free_nodes(chaos_lab)[:2])
    before = Before.take(chaos_lab)
    try:
        onboarding = await api.start_onboarding(contract)
        await wait_for_stage(api, onboarding, "gate:approve_plan", timeout_s=120)
        arg = OffboardingInput(contract=contract, purge_data=True)
        cli_id = offboarding_id(contract.slug)
        await asyncio.to_thread(cli_start, chaos_server, api.task_queue, "TenantOffboarding", cli_id, arg)
        plain = api.client.get_workflow_handle(cli_id)
        await wait_for_stage(api, plain, "refused", timeout_s=60)
        with pytest.raises(WorkflowFailureError) as failed:
            await plain.result()
        refused = failed.value.cause
        assert isinstance(refused, ApplicationError) and refused.type == "TenantHeld", refused
        assert f"{onboarding.id} (TenantOnboarding) of the same tenant is in progress" in refused.message
        events = (await plain.fetch_history()).events
        assert not [e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
        end = await approve_and_wait(api, onboarding.id)
        assert end[0] == "completed", end
        assert contract.slug in world_snapshot(chaos_lab)["authentik"]["groups"]
        STATS.notes.append(f"plain CLI start: {cli_id} refused, {onboarding.id} ran; {refused.message}"[:200])
        STATS.runs_completed += 1
        STATS.runs_failed_as_expected += 1
    finally:
        if contract.slug in world_snapshot(chaos_lab)["authentik"]["groups"]:
            assert (await offboard(api, contract, purge=True)).status == "completed"
    tally(scenario, chaos_lab, before, (contract.slug, *contract.usernames, contract.team_account or ""))
    scenario.outcome = "CLI start refused; one ran"
