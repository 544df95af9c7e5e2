"""``pods/exec`` over websockets (``v5.channel.k8s.io``, ``v4.channel.k8s.io``) and ``pods/log``.

Each frame is binary with a one-byte channel prefix: 0 stdin, 1 stdout, 2 stderr,
3 the final ``Status`` JSON (exit code in ``details.causes``), 255 (v5 only) a
close signal from the client. Commands are not run here: an injectable
:data:`ExecHandler` answers them, so the lab can route e.g. the slurmctld pod's
``sacctmgr`` to the host; under a lost-response fault (:func:`lab.httpbase.response_lost`) the command runs
and the connection closes before its output and status. Stdin is collected first (until the v5 close signal,
the client closing, or 0.3 s of silence) and handed over whole. SPDY upgrade
attempts get a 400 ``Status`` (kubectl 1.32 speaks websockets first).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from tenantflow.lab.httpbase import response_lost
from tenantflow.lab.kubeapi.errors import ApiError, bad_request

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255
STDIN_IDLE_S = 0.3
LOG_ANNOTATION = "lab.tenantflow.io/log"


@dataclass
class ExecResult:
    stdout: bytes | str = b""
    stderr: bytes | str = b""
    exit_code: int = 0


ExecHandler = Callable[[str, str, str, list[str], bytes], Awaitable[ExecResult]]
"""``(namespace, pod, container, argv, stdin) -> ExecResult``."""
LogProvider = Callable[[str, str, str, dict[str, Any]], str]
"""``(namespace, pod, container, pod object) -> log text``."""


async def no_exec_handler(namespace: str, pod: str, container: str, argv: list[str], stdin: bytes) -> ExecResult:
    return ExecResult(stderr=f"lab: no exec handler for {namespace}/{pod}\n", exit_code=126)


def annotation_logs(namespace: str, pod: str, container: str, obj: dict[str, Any]) -> str:
    """Default log text: the pod's ``lab.tenantflow.io/log`` annotation, else nothing."""
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(LOG_ANNOTATION, ""))


def pick_container(pod: dict[str, Any], requested: str | None) -> str:
    """The container an exec runs in: the requested one, or the only one; a multi-container pod needs a name."""
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    if requested:
        if requested not in names:
            raise bad_request(f"container {requested} is not valid for pod {pod['metadata']['name']}")
        return requested
    if not names:
        raise bad_request(f"pod {pod['metadata']['name']} has no containers")
    if len(names) > 1:
        # the apiserver's own answer (kubectl applies kubectl.kubernetes.io/default-container client-side)
        raise bad_request(
            f"a container name must be specified for pod {pod['metadata']['name']}, choose one of: [{' '.join(names)}]"
        )
    return names[0]


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


def exit_status(code: int) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


async def _read_stdin(ws: web.WebSocketResponse, v5: bool) -> bytes:
    data = b""
    while True:
        try:
            msg = await ws.receive(timeout=STDIN_IDLE_S)
        except TimeoutError:
            return data
        if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
            return data
        raw = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
        if not raw:
            continue
        if raw[0] == STDIN:
            data += raw[1:]
        elif v5 and raw[0] == CLOSE:
            return data


async def serve_exec(request: web.Request, pod: dict[str, Any], handler: ExecHandler) -> web.StreamResponse:
    """Answer an exec upgrade for ``pod`` (already authorised and looked up)."""
    upgrade = request.headers.get("Upgrade", "").lower()
    if upgrade != "websocket":
        raise ApiError(
            400,
            "BadRequest",
            "lab kube API: exec needs a websocket upgrade (v5.channel.k8s.io); "
            f"{upgrade or 'plain HTTP'} is not supported",
        )
    query = request.query
    container = pick_container(pod, query.get("container"))
    argv = query.getall("command", [])
    if not argv:
        raise bad_request("you must specify at least 1 command")
    ws = web.WebSocketResponse(protocols=PROTOCOLS)
    await ws.prepare(request)
    v5 = ws.ws_protocol == PROTOCOLS[0]
    stdin = await _read_stdin(ws, v5) if query.get("stdin") in ("1", "true", "True") else b""
    meta = pod["metadata"]
    try:
        result = await handler(meta["namespace"], meta["name"], container, argv, stdin)
    except Exception as exc:
        result = ExecResult(stderr=f"lab exec handler failed: {exc!r}\n", exit_code=1)
    if response_lost(request):
        return ws  # the command ran; the lab middleware closes the connection before any of its output
    for channel, data in ((STDOUT, result.stdout), (STDERR, result.stderr)):
        payload = _as_bytes(data)
        wanted = query.get("stdout" if channel == STDOUT else "stderr", "true") in ("1", "true", "True")
        if payload and wanted:
            await ws.send_bytes(bytes([channel]) + payload)
    await ws.send_bytes(bytes([ERROR]) + json.dumps(exit_status(result.exit_code)).encode())
    await asyncio.sleep(0)
    await ws.close()
    return ws
