"""An operator approves an onboarding in the Temporal UI: the run list, the run's page, its Current Details,
Send an Update.

Against the lab and a real worker: the waiting run is found in the run list filtered by ``Stage``; its User
Metadata shows what it does and who started it, and the gate's instructions verbatim (``--plan-hash``,
straight quotes); the Send an Update form offers every gate with its description; the JSON payload copied from
Current Details, sent as ``approve_plan`` through that form, lets the run complete. The UI cannot prove who sends
an update, so its approval is recorded as declared, and counts only where the worker lets declared approvers count
(here: no verified approvers, no four-eyes; under the shipped defaults it is refused, tests/security/test_approvals.py).

Proved once (session 4) to fail when Current Details go back to plain Markdown lines: the UI then shows
an en dash for the ``--`` of ``--plan-hash`` and curly quotes, and the assertion on the approve command fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from playwright.async_api import Browser
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowFailureError

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.devserver import DevServer
from tenantflow.workflows.onboarding import TenantOnboarding
from tests.integration.runs import offboard
from tests.labfixture import lab_worker
from tests.ui.conftest import ARTIFACTS
from tests.ui.temporal_ui import operator_session
from tests.workflows.contract import EXAMPLES
from tests.workflows.test_gate_updates import gates_of

WAITING = 'Stage = "gate:approve_plan"'
"""The run list's filter for runs waiting for their plan's approval."""


async def wait_until_listed(api: TenantflowClient, query: str, workflow_id: str) -> None:
    """Until visibility (what the run list reads) has the run under ``query``: it follows the run's upserts."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while workflow_id not in {run.id for run in await api.list_runs(query)}:
        assert loop.time() < deadline, f"{workflow_id} is not listed under {query}"
        await asyncio.sleep(0.2)


async def described_updates(api: TenantflowClient, workflow_id: str) -> dict[str, str]:
    """The run's updates and their descriptions, as the worker declares them (what the UI's form lists)."""
    metadata = await api.handle(workflow_id).query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return {update.name: update.description for update in metadata.definition.update_definitions}


async def approve_in_ui(browser: Browser, temporal_ui: DevServer, api: TenantflowClient, workflow_id: str) -> None:
    async with operator_session(
        browser, f"http://{temporal_ui.ip}:{temporal_ui.ui_port}", ARTIFACTS / "approve_plan"
    ) as ui:
        await ui.find_run(WAITING, workflow_id)
        shown = await ui.user_metadata()
        assert "Onboard tenant-foo: 64 GPUs h100-8x, 3 users" in shown.summary
        assert f"started by: {api.identity}" in shown.details
        assert f"tenantflow approve {workflow_id} --plan-hash " in shown.current_details, shown.current_details
        assert "Temporal UI: Update approve_plan with:" in shown.current_details
        payload = shown.payload()
        assert payload == {"plan_hash": (await api.status(workflow_id)).plan_hash}
        offered = await ui.open_update_form()
        assert {name: text for name, text in offered.items() if name != "Custom"} == await described_updates(
            api, workflow_id
        )
        assert all(offered.get(gate) for gate in gates_of(TenantOnboarding)), offered
        await ui.send_update("approve_plan", json.dumps(payload))
        result = await api.result(workflow_id)
        assert isinstance(result, OnboardingResult) and result.status == "completed", result
        assert [(a.approver, a.established) for a in result.approvals] == [("operator", "declared")]
        await ui.expect_status("Completed")


async def test_operator_approves_the_plan_in_the_ui(
    lab: LabEndpoints, temporal_ui: DevServer, ui_client: Client, browser: Browser
) -> None:
    contract = load_tenant(EXAMPLES / "tenant-foo.yaml")
    async with lab_worker(ui_client, lab, TENANTFLOW_VERIFIED_APPROVERS="", TENANTFLOW_FOUR_EYES="") as api:
        handle = await api.start_onboarding(contract)
        await api.wait_for_plan(handle.id)
        await wait_until_listed(api, WAITING, handle.id)
        try:
            await approve_in_ui(browser, temporal_ui, api, handle.id)
        finally:
            if await api.running(handle.id):
                await handle.cancel()
                with contextlib.suppress(WorkflowFailureError):
                    await handle.result()
            else:
                await offboard(api, contract, purge=True)
