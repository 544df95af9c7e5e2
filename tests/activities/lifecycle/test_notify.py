"""The notifier (``lifecycle.notify``) against the lab's webhook sink over a real socket: a notice arrives as JSON
with a stable Idempotency-Key; a refusal fails as the receiver said; without a URL the notice is only logged. And
``TENANTFLOW_TERM_REMINDER_DAYS`` is read, or refused naming the variable's fix."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.settings import ServiceSettings
from tenantflow.activities.records.lifecycle import idempotency_key, notify, reminder_days
from tenantflow.models.lifecycle import TermNotice
from tests.labfixture import exported
from tests.workflows.lifecycle_harness import notify_sink, received

NOTICE = TermNotice(
    event="term.reminder",
    tenant="tenant-foo",
    workflow_id="lifecycle/tenant-foo",
    term_end=datetime(2027, 12, 3, 12, tzinfo=UTC),
    days_left=7,
    message="the term of tenant-foo ends in 7 days",
)


async def test_a_notice_arrives_as_json_with_its_idempotency_key() -> None:
    async with notify_sink() as sink:
        with exported({"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{sink}/hooks/ops"}):
            sent = await asyncio.to_thread(notify, NOTICE)
        assert sent.delivered and sent.status == 200
        [got] = await received(sink)
    assert got["path"] == "/hooks/ops" and got["idempotency_key"] == idempotency_key(NOTICE)
    assert TermNotice.model_validate(got["body"]) == NOTICE


async def test_a_refused_notice_fails_with_the_receivers_answer() -> None:
    async with notify_sink() as sink:
        with (
            exported({"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{sink}/no-such-hook"}),
            pytest.raises(ApplicationError) as err,
        ):
            await asyncio.to_thread(notify, NOTICE)
        assert not await received(sink)
    assert err.value.type == "NotFound" and err.value.non_retryable and "HTTP 404" in str(err.value)


async def test_an_unreachable_webhook_is_retried() -> None:
    async with notify_sink() as sink:
        gone = sink
    with exported({"TENANTFLOW_NOTIFY_WEBHOOK_URL": f"{gone}/hooks/ops"}), pytest.raises(ApplicationError) as err:
        await asyncio.to_thread(notify, NOTICE)
    assert err.value.type == "Unavailable" and not err.value.non_retryable


def test_without_a_webhook_the_notice_is_undelivered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TENANTFLOW_NOTIFY_WEBHOOK_URL", raising=False)
    with exported({}):
        sent = notify(NOTICE)
    assert not sent.delivered and "TENANTFLOW_NOTIFY_WEBHOOK_URL" in sent.detail
    with pytest.raises(ValidationError, match="TENANTFLOW_NOTIFY_WEBHOOK_URL"):
        ServiceSettings(TENANTFLOW_NOTIFY_WEBHOOK_URL="hooks.example.internal/x")


def test_reminder_days_come_from_the_worker_settings() -> None:
    with exported({"TENANTFLOW_TERM_REMINDER_DAYS": "7, 30,1,7"}):
        assert reminder_days("tenant-foo") == [30, 7, 1]
    with pytest.raises(ValidationError, match="TENANTFLOW_TERM_REMINDER_DAYS"):
        ServiceSettings(TENANTFLOW_TERM_REMINDER_DAYS="30,seven")
    with pytest.raises(ValidationError, match="1 to 3650"):
        ServiceSettings(TENANTFLOW_TERM_REMINDER_DAYS="0")
