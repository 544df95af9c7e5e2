"""``gates.notify`` against the lab's webhook sink over a real socket: the Slack-compatible body (mrkdwn ``text``
with the commands in code blocks and Slack's control characters escaped, the facts as message metadata), a stable
Idempotency-Key per event and opening; without a webhook nothing is posted."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.records.gate_notify import idempotency_key, notify_gate
from tenantflow.models.gates import GateNotice
from tests.labfixture import exported
from tests.worker.test_main import refused_address
from tests.workflows.lifecycle_harness import notify_sink, received

TOKEN = "T0000/B0000/XXXXsecretXXXX"
"""The secret part of a Slack incoming webhook's URL."""
OPENED = datetime(2027, 3, 1, 9, tzinfo=UTC)
IN_DEFAULT = ActivityEnvironment()
"""Runs the activity as Temporal would, in a run of the namespace ``default`` (the activity's info says which)."""
NOTICE = GateNotice(
    event="opened",
    workflow_type="TenantOffboarding",
    workflow_id="offboard/tenant-foo",
    run_id="0195f0c2-0000-7000-8000-000000000001",
    gate="confirm_purge",
    opening=1,
    description="permanently delete the Weka data of tenant-foo (<2 TiB> & more)",
    how_to_answer=[
        "tenantflow confirm-purge offboard/tenant-foo",
        "temporal workflow update execute --workflow-id offboard/tenant-foo --name confirm_purge --input "
        '\'{"approver": "you"}\'',
    ],
    opened_at=OPENED,
    escalates_at=OPENED + timedelta(hours=1),
    expires_at=OPENED + timedelta(days=7),
)


async def test_a_notification_is_a_slack_message_with_its_commands_and_the_runs_link() -> None:
    values = {"TENANTFLOW_TEMPORAL_UI_URL": "https://ui.example.internal/"}
    async with notify_sink() as sink:
        with exported(values | {"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{sink}/hooks/chat"}):
            sent = await asyncio.to_thread(IN_DEFAULT.run, notify_gate, NOTICE)
            escalated = NOTICE.model_copy(update={"event": "escalated"})
            await asyncio.to_thread(IN_DEFAULT.run, notify_gate, escalated)
        assert sent.delivered and sent.status == 200
        first, second = await received(sink)
    link = (
        "https://ui.example.internal/namespaces/default/workflows/offboard%2Ftenant-foo/"
        "0195f0c2-0000-7000-8000-000000000001/history"
    )
    text, metadata = first["body"]["text"], first["body"]["metadata"]
    assert text.startswith("*TenantOffboarding `offboard/tenant-foo` waits at gate `confirm_purge`*")
    assert "```permanently delete the Weka data of tenant-foo (&lt;2 TiB&gt; &amp; more)```" in text, (
        "the description in a code block, Slack's control characters escaped"
    )
    assert all(f"```{how}```" in text for how in NOTICE.how_to_answer) and f"<{link}|" in text
    assert metadata["event_type"] == "tenantflow_gate_opened"
    assert metadata["event_payload"]["commands"] == NOTICE.how_to_answer
    assert metadata["event_payload"]["ui_url"] == link
    assert metadata["event_payload"]["expires_at"] == "2027-03-08T09:00:00Z"
    assert first["idempotency_key"] == "offboard/tenant-foo/0195f0c2-0000-7000-8000-000000000001/confirm_purge/1/opened"
    assert second["idempotency_key"].endswith("/confirm_purge/1/escalated")
    assert second["body"]["text"].startswith("*ESCALATED: TenantOffboarding")
    reopened = NOTICE.model_copy(update={"opening": 2})
    assert idempotency_key(reopened) not in {first["idempotency_key"], second["idempotency_key"]}


async def test_a_failed_delivery_never_names_the_webhooks_secret_path() -> None:
    """A Slack webhook's path is its token: neither a refusal whose body echoes the path nor a connection that
    fails puts it in the error (which reaches the history and the log)."""

    async def echo(request: web.Request) -> web.Response:
        return web.Response(status=403, text=f"no such hook: {request.path}")

    app = web.Application()
    app.router.add_post("/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        for url in (f"http://127.0.0.1:{port}/services/{TOKEN}", f"http://{refused_address()}/services/{TOKEN}"):
            with exported({"TENANTFLOW_NOTIFY_WEBHOOK_URL": url}), pytest.raises(ApplicationError) as failed:
                await asyncio.to_thread(IN_DEFAULT.run, notify_gate, NOTICE)
            assert TOKEN not in str(failed.value) and "notifier webhook" in str(failed.value), failed.value
    finally:
        await runner.cleanup()


def test_without_a_webhook_nothing_is_posted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TENANTFLOW_NOTIFY_WEBHOOK_URL", raising=False)
    with exported({}):
        sent = IN_DEFAULT.run(notify_gate, NOTICE)
    assert not sent.delivered and "TENANTFLOW_NOTIFY_WEBHOOK_URL" in sent.detail


async def test_text_from_a_client_or_a_plan_cannot_format_or_link_the_message() -> None:
    """A workflow id any Temporal client chooses and a description from a plan stay literal: a backtick cannot end
    the code span, a fence cannot end the code block, so ``*bold*`` and a URL are shown, not formatted or linked."""
    hostile = NOTICE.model_copy(
        update={
            "workflow_id": "offboard/x` *urgent: approve at* https://evil.example `",
            "description": "plan\n```\n*click* https://evil.example/approve",
        }
    )
    async with notify_sink() as sink:
        with exported({"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{sink}/hooks/chat"}):
            await asyncio.to_thread(IN_DEFAULT.run, notify_gate, hostile)
        [sent] = await received(sink)
    text = sent["body"]["text"]
    assert "`offboard/x' *urgent: approve at* https://evil.example '`" in text
    assert "```plan\n'''\n*click* https://evil.example/approve```" in text
