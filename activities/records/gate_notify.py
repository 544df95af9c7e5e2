"""Gate notifications: a gate opened, its expiry is near, or it escalated, POSTed to the notifier webhook as a chat
message that carries the exact commands that answer the gate and a link to the run in the Temporal UI.

The body is a Slack incoming-webhook message (https://api.slack.com/messaging/webhooks): ``text`` in Slack's mrkdwn
(https://api.slack.com/reference/surfaces/formatting: ``*bold*``, code blocks in triple backticks, ``<url|label>``
links; ``&``, ``<`` and ``>`` escaped), so Slack and the chat tools that take its format show it as it is; and
``metadata``, Slack's message metadata (https://api.slack.com/reference/metadata: ``event_type`` and
``event_payload``), with the same facts as fields for a receiver that is not a chat (an alert router, a ticket bot):
the workflow type, id and run id, the namespace, the gate, the event (``opened``, ``deadline``, ``escalated``), which
opening of the gate it is, its description, ``commands`` (the gate's ``how_to_answer``, unescaped), ``ui_url`` and the
gate's times.

It goes where the term notices go (``TENANTFLOW_NOTIFY_WEBHOOK_URL``) through the same poster
(:mod:`activities.common.webhook`): the ``Idempotency-Key`` is the same on every retry of one notification and
differs for every other (workflow id, run id, gate, opening, event), so a receiver drops a retry's repeat. Without a
URL nothing is posted and the worker says so once. The run awaits a notification for at most 30 s and never fails by
one (``workflows/gate_waits.py``). Text from a contract, a plan or a client (the gate's description, the workflow id)
goes into code blocks and spans, where Slack neither formats it nor turns a URL in it into a link.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from temporalio import activity

from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.webhook import NO_WEBHOOK, post_notice
from tenantflow.models import runbook
from tenantflow.models.gates import GateNotice
from tenantflow.models.lifecycle import NoticeSent

FENCE = "```"
"""A mrkdwn code block's fence."""
DESCRIPTION_CHARS = 3000
"""At most this much of a gate's description goes into the message (a plan gate may show a command's output)."""
EVENT_TYPE = "tenantflow_gate_{event}"
"""The message metadata's ``event_type`` (Slack: letters, digits and underscores)."""


def idempotency_key(notice: GateNotice) -> str:
    """The same for every delivery attempt of one notification, different for every other."""
    return f"{notice.workflow_id}/{notice.run_id}/{notice.gate}/{notice.opening}/{notice.event}"


def ui_url(notice: GateNotice, namespace: str, base: str) -> str:
    """The run's history in the Temporal UI at ``base`` (the workflow id URL-encoded: tenant ids hold a ``/``)."""
    workflow_id = quote(notice.workflow_id, safe="")
    return f"{base}/namespaces/{quote(namespace, safe='')}/workflows/{workflow_id}/{notice.run_id}/history"


def escaped(text: str) -> str:
    """``text`` as literal mrkdwn: Slack's three control characters as HTML entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_block(text: str) -> str:
    """``text`` in a mrkdwn code block, where Slack neither formats nor links; a fence inside cannot end it."""
    return FENCE + escaped(text).replace(FENCE, "'''") + FENCE


def code_span(text: str) -> str:
    """``text`` (a workflow id any Temporal client may choose, a gate's name) in a code span it cannot leave."""
    return "`" + text.replace("`", "'") + "`"


def headline(notice: GateNotice) -> str:
    run, gate = f"{notice.workflow_type} {code_span(notice.workflow_id)}", code_span(notice.gate)
    if notice.event == "opened":
        return f"{run} waits at gate {gate}"
    if notice.event == "deadline":
        return f"{run}: gate {gate} expires at {notice.expires_at:%Y-%m-%d %H:%M}Z; unanswered, the run fails"
    return f"ESCALATED: {run} still waits at gate {gate} (open since {notice.opened_at:%Y-%m-%d %H:%M}Z)"


def message(notice: GateNotice, namespace: str, link: str) -> dict[str, Any]:
    """The webhook's body: mrkdwn ``text`` and the facts (``namespace``: the run's) as Slack message metadata."""
    description = notice.description
    if len(description) > DESCRIPTION_CHARS:
        description = description[:DESCRIPTION_CHARS] + " [...]"
    commands = "\n".join(code_block(how) for how in notice.how_to_answer)
    text = (
        f"*{escaped(headline(notice))}*\n{code_block(description)}\n"
        f"Answer with one of:\n{commands}\n<{link}|Open the run in the Temporal UI>"
    )
    payload = notice.model_dump(mode="json", exclude={"how_to_answer"})
    return {
        "text": text,
        "metadata": {
            "event_type": EVENT_TYPE.format(event=notice.event),
            "event_payload": payload | {"namespace": namespace, "commands": notice.how_to_answer, "ui_url": link},
        },
    }


@lru_cache(maxsize=1)
def _say_unconfigured() -> None:
    """Once per worker process: gate notifications are off."""
    activity.logger.warning("%s: gate notifications are not sent (set it to the chat's incoming webhook)", NO_WEBHOOK)


@defn(runbook.GATE_NOTIFY)
def notify_gate(notice: GateNotice) -> NoticeSent:
    """POST the notification of ``notice`` to the webhook; nothing (said once) when no webhook is configured."""
    namespace = activity.info().namespace
    link = ui_url(notice, namespace, settings().temporal_ui_url)
    sent = post_notice(json.dumps(message(notice, namespace, link)), idempotency_key(notice))
    if not sent.delivered:
        _say_unconfigured()
    return sent


ACTIVITIES = [notify_gate]
