"""Gates reach people (issue 27): an onboarding's ``approve_plan`` gate, on the time-skipping test server, posts
``opened``, ``escalated`` and ``deadline`` notifications through the real ``gates.notify`` to the lab's webhook sink
on a real socket, each with the gate's exact commands and the run's link in the Temporal UI; a webhook that refuses
them leaves the gate waiting and answerable as before; a run with no webhook configured sends nothing and fails
nothing. (A notification is a local activity: a worker runs it only if it registers it, and the worker registers
every activity of the catalogue, ``tests/unit/models/test_runbook.py``.)"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.records.gate_notify import notify_gate
from tenantflow.models.lifecycle import RenewTerm, TermStatus
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.tenant_hold import TenantHold
from tests.labfixture import exported
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import wait_for_stage, waiting_on_a_timer
from tests.workflows.lifecycle_harness import (
    distinct,
    notify_sink,
    received,
    start_term,
    term_worker,
    wait_received,
)

UI = "https://temporal.example.internal"
HOUR = 3600
DAYS_3 = 3 * 24 * HOUR


@asynccontextmanager
async def gate_worker(
    env: WorkflowEnvironment, webhook: str | None, notifier: list[Callable[..., Any]]
) -> AsyncIterator[TenantflowClient]:
    """A worker with the fake steps and ``notifier`` for ``gates.notify`` (none: not registered), posting to
    ``webhook`` (None: no webhook configured) and linking runs to :data:`UI` (a trailing slash, as an operator may
    write it)."""
    world = FakeWorld(gate_notifier=False)
    queue = f"gates-{uuid.uuid4().hex[:8]}"
    values = {"TENANTFLOW_TEMPORAL_UI_URL": f"{UI}/"}
    if webhook is not None:
        values["TENANTFLOW_NOTIFY_WEBHOOK_URL"] = webhook
    with exported(values), ThreadPoolExecutor(max_workers=4) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[TenantOnboarding, TenantHold],
            activities=[*world.activities(), *notifier],
            activity_executor=pool,
        ):
            yield TenantflowClient(env.client, queue)


async def test_an_unanswered_gate_notifies_opened_escalated_and_deadline_with_its_commands(
    ts_env: WorkflowEnvironment,
) -> None:
    async with notify_sink() as sink, gate_worker(ts_env, f"{sink}/hooks/ops", [notify_gate]) as api:
        handle = await api.start_onboarding(
            example_tenant(), approval_escalate_after_s=HOUR, approval_expire_after_s=DAYS_3
        )
        [gate] = (await wait_for_stage(api, handle, "gate:approve_plan")).gates
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        assert "gate approve_plan expired" in str(failure.value.cause)
        got = await wait_received(sink, 3)
        run_id = (await handle.describe()).run_id
    assert {n["body"]["metadata"]["event_payload"]["event"] for n in got} == {"opened", "escalated", "deadline"}
    link = f"{UI}/namespaces/default/workflows/{quote(handle.id, safe='')}/{run_id}/history"
    approve = gate.how_to_answer[0]
    assert approve.startswith(f"tenantflow approve {handle.id} --plan-hash "), approve
    for notice in got:
        payload = notice["body"]["metadata"]["event_payload"]
        event = payload["event"]
        assert notice["path"] == "/hooks/ops"
        assert notice["body"]["metadata"]["event_type"] == f"tenantflow_gate_{event}"
        assert notice["idempotency_key"] == f"{handle.id}/{run_id}/approve_plan/1/{event}"
        assert (payload["workflow_id"], payload["run_id"], payload["gate"]) == (handle.id, run_id, "approve_plan")
        assert payload["commands"] == gate.how_to_answer and payload["ui_url"] == link
        assert f"```{approve}```" in notice["body"]["text"] and f"<{link}|" in notice["body"]["text"]
    deadline = next(n["body"] for n in got if n["body"]["metadata"]["event_payload"]["event"] == "deadline")
    assert "expires at" in deadline["text"] and deadline["metadata"]["event_payload"]["expires_at"]


async def answer_after_escalation(env: WorkflowEnvironment, api: TenantflowClient) -> tuple[OnboardingResult, Any]:
    """Onboard, let the plan gate escalate, approve it: the result and the run's history."""
    handle = await api.start_onboarding(
        example_tenant(), approval_escalate_after_s=HOUR, approval_expire_after_s=DAYS_3
    )
    await wait_for_stage(api, handle, "gate:approve_plan")
    await waiting_on_a_timer(handle)
    await env.sleep(timedelta(hours=2))
    status = await wait_for_stage(api, handle, "gate:approve_plan-escalated")
    assert status.plan_hash and [g.escalated for g in status.gates] == [True]
    await api.approve(handle.id, status.plan_hash)
    result: OnboardingResult = await handle.result()
    return result, await handle.fetch_history()


def failed_notifications(history: Any) -> int:
    """How many of the run's local activities (its gate notifications: the onboarding's other steps complete)
    recorded a failure."""
    return sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
        and e.marker_recorded_event_attributes.HasField("failure")
    )


def notifications(history: Any) -> list[dict[str, Any]]:
    """The results of the run's ``gates.notify`` local activities (from their markers' ``data`` and ``result``)."""
    found = []
    for e in history.events:
        marker = e.marker_recorded_event_attributes
        if e.event_type != EventType.EVENT_TYPE_MARKER_RECORDED or marker.marker_name != "core_local_activity":
            continue
        if json.loads(marker.details["data"].payloads[0].data)["activity_type"] != "gates.notify":
            continue
        result = marker.details["result"].payloads if "result" in marker.details else []
        found.append(json.loads(result[0].data) if result else {})
    return found


async def test_a_refused_notification_leaves_the_gate_waiting_and_answerable(ts_env: WorkflowEnvironment) -> None:
    async with notify_sink() as sink, gate_worker(ts_env, f"{sink}/no-such-hook", [notify_gate]) as api:
        result, history = await answer_after_escalation(ts_env, api)
        assert not await received(sink)
    assert result.status == "completed", result.message
    assert failed_notifications(history) == 2  # opened, escalated: both refused (404: not retried), the gate answered


async def test_without_a_webhook_nothing_is_sent_and_the_gate_runs(
    ts_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TENANTFLOW_NOTIFY_WEBHOOK_URL", raising=False)
    async with notify_sink() as sink, gate_worker(ts_env, None, [notify_gate]) as api:
        result, history = await answer_after_escalation(ts_env, api)
        assert not await received(sink)
    assert result.status == "completed", result.message
    assert failed_notifications(history) == 0  # not sent is no failure
    sent = notifications(history)
    assert [n["delivered"] for n in sent] == [False, False], "opened and escalated ran, each saying it was not sent"
    assert all("TENANTFLOW_NOTIFY_WEBHOOK_URL" in n["detail"] for n in sent), sent


async def test_a_renewal_waiting_at_approve_plan_notifies_with_its_commands(ts_env: WorkflowEnvironment) -> None:
    contract = example_tenant(f"tenant-n{uuid.uuid4().hex[:6]}")
    async with notify_sink() as sink, term_worker(ts_env, FakeWorld(gate_notifier=False), sink) as api:
        handle, end = await start_term(ts_env, api, contract)
        requested = await handle.execute_update("renew", RenewTerm(days=20, approver="ops"), result_type=TermStatus)
        pending = requested.pending_renewal
        assert pending is not None
        [notice] = [n for n in distinct(await wait_received(sink, 1)) if "metadata" in n["body"]]
        [gate] = (await api.status(handle.id)).gates
        await handle.terminate("test done")
    payload = notice["body"]["metadata"]["event_payload"]
    approve = f"tenantflow approve {handle.id} --plan-hash {pending.plan_hash}"
    assert notice["path"] == "/hooks/term" and payload["event"] == "opened" and payload["gate"] == "approve_plan"
    assert payload["workflow_type"] == "TenantLifecycle" and payload["commands"] == gate.how_to_answer
    assert approve in payload["commands"] and f"```{approve}```" in notice["body"]["text"]
    assert datetime.fromisoformat(payload["expires_at"]) == end and payload["escalates_at"] is None
    link = f"{payload['ui_url']}|"
    assert payload["ui_url"].endswith(f"/workflows/{quote(handle.id, safe='')}/{payload['run_id']}/history")
    assert link in notice["body"]["text"]
