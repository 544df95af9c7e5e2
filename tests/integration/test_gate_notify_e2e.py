"""Issue 27 acceptance: a gate opened in the lab delivers a notification with the approve command to the lab's
webhook sink (whole lab, real worker: ``TENANTFLOW_NOTIFY_WEBHOOK_URL`` from the lab's ``lab.env``; the sink read
over HTTP). The run is rejected at its plan gate afterwards, so nothing is written."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.settings import settings
from tenantflow.lab.endpoints import LabEndpoints
from tests.approvers import reviewer
from tests.integration.rollback_rig import tenant
from tests.labfixture import lab_worker
from tests.workflows.lifecycle_harness import distinct, received

NOTICE_WAIT_S = 30.0


async def notice_of(sink: str, run_id: str, event: str) -> dict[str, Any]:
    """The sink's notification of ``event`` for the run ``run_id`` (the sink is the session lab's, shared)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + NOTICE_WAIT_S
    while True:
        found = [
            n
            for n in distinct(await received(sink))
            if n["body"].get("metadata", {}).get("event_payload", {}).get("run_id") == run_id
            and n["body"]["metadata"]["event_payload"]["event"] == event
        ]
        if found:
            assert len(found) == 1, f"{len(found)} distinct {event} notifications (by Idempotency-Key): {found}"
            return found[0]
        if loop.time() > deadline:
            raise AssertionError(f"no {event} notification of {run_id} in {NOTICE_WAIT_S} s: {await received(sink)}")
        await asyncio.sleep(0.1)


async def test_a_gate_opened_in_the_lab_notifies_the_webhook_sink_with_the_approve_command(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    assert lab.notify_url, "the lab runs a webhook sink and writes it into lab.env"
    contract = tenant(lab, "gn")
    async with lab_worker(dev_env.client, lab) as api:
        handle = await api.start_onboarding(contract)
        status = await api.wait_for_plan(handle.id)
        run_id = (await handle.describe()).run_id
        ui = settings().temporal_ui_url  # the worker's, read while the lab's environment is exported
        try:
            notice = await notice_of(lab.notify_url, run_id, "opened")
        finally:
            await reviewer(api).reject(handle.id, "issue 27 acceptance: only the notification was wanted")
            await handle.result()
    approve = f"tenantflow approve {handle.id} --plan-hash {status.plan_hash}"
    link = f"{ui}/namespaces/{dev_env.client.namespace}/workflows/{quote(handle.id, safe='')}/{run_id}/history"
    payload = notice["body"]["metadata"]["event_payload"]
    assert notice["path"] == "/hooks/tenantflow"
    assert notice["idempotency_key"] == f"{handle.id}/{run_id}/approve_plan/1/opened"
    assert payload["gate"] == "approve_plan" and payload["workflow_id"] == handle.id
    assert approve in payload["commands"] and payload["commands"] == status.gates[0].how_to_answer
    assert payload["ui_url"] == link
    assert f"```{approve}```" in notice["body"]["text"] and f"<{link}|" in notice["body"]["text"]
