"""An operator approves an onboarding in the Temporal UI: the run's page, its Current Details, Send an Update.

Against the lab and a real worker: the waiting run's User Metadata shows what it does and who started it,
and the gate's instructions verbatim (``--plan-hash``, straight quotes); the JSON payload copied from
Current Details, sent as ``approve_plan`` through the UI's form, lets the run complete.
"""

from __future__ import annotations

import contextlib
import json

from playwright.async_api import Browser
from temporalio.client import Client, WorkflowFailureError

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.devserver import DevServer
from tests.integration.runs import offboard
from tests.labfixture import lab_worker
from tests.ui.conftest import ARTIFACTS
from tests.ui.temporal_ui import operator_session
from tests.workflows.contract import EXAMPLES


async def approve_in_ui(browser: Browser, temporal_ui: DevServer, api: TenantflowClient, workflow_id: str) -> None:
    async with operator_session(
        browser, f"http://{temporal_ui.ip}:{temporal_ui.ui_port}", ARTIFACTS / "approve_plan"
    ) as ui:
        await ui.open_run(workflow_id)
        shown = await ui.user_metadata()
        assert "Onboard tenant-foo: 64 GPUs h100-8x, 3 users" in shown.summary
        assert f"started by: {api.identity}" in shown.details
        assert f"tenantflow approve {workflow_id} --plan-hash " in shown.current_details, shown.current_details
        assert "Temporal UI: Update approve_plan with:" in shown.current_details
        payload = shown.payload()
        assert payload == {"plan_hash": (await api.status(workflow_id)).plan_hash}
        await ui.send_update("approve_plan", json.dumps(payload))
        result = await api.result(workflow_id)
        assert isinstance(result, OnboardingResult) and result.status == "completed", result
        await ui.expect_status("Completed")


async def test_operator_approves_the_plan_in_the_ui(
    lab: LabEndpoints, temporal_ui: DevServer, ui_client: Client, browser: Browser
) -> None:
    contract = load_tenant(EXAMPLES / "tenant-foo.yaml")
    async with lab_worker(ui_client, lab) as api:
        handle = await api.start_onboarding(contract)
        await api.wait_for_plan(handle.id)
        try:
            await approve_in_ui(browser, temporal_ui, api, handle.id)
        finally:
            if await api.running(handle.id):
                await handle.cancel()
                with contextlib.suppress(WorkflowFailureError):
                    await handle.result()
            else:
                await offboard(api, contract, purge=True)
