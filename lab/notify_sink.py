"""The lab's webhook receiver: keeps every JSON notice POSTed to ``/hooks/<name>``, for tests to read.

It stands in for whatever receives tenantflow's term notices (a chat webhook, an alert router); like
such receivers it takes only ``POST`` with a JSON object body (415 for another content type, 400 for a
body that is not a JSON object) and answers 200. What it received, in order (path, ``Idempotency-Key``
header, body), is the app's snapshot: ``GET /_lab/snapshot`` (:mod:`lab.httpbase`); the journal and fault
injection of every lab app apply.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tenantflow.lab.httpbase import make_app

RECEIVED_KEY: web.AppKey[list[dict[str, Any]]] = web.AppKey("received", list)


async def receive(request: web.Request) -> web.Response:
    if request.content_type != "application/json":
        return web.json_response({"error": f"Content-Type {request.content_type!r}: send application/json"}, status=415)
    try:
        body = json.loads(await request.text())
    except ValueError as exc:
        return web.json_response({"error": f"the body is not JSON: {exc}"}, status=400)
    if not isinstance(body, dict):
        return web.json_response({"error": "the body is not a JSON object"}, status=400)
    request.app[RECEIVED_KEY].append(
        {"path": request.path, "idempotency_key": request.headers.get("Idempotency-Key", ""), "body": body}
    )
    return web.json_response({"ok": True})


def build_app() -> web.Application:
    received: list[dict[str, Any]] = []
    app = make_app("notify-sink", snapshot=lambda: received)
    app[RECEIVED_KEY] = received
    app.router.add_post("/hooks/{name}", receive)
    return app
