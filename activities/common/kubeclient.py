"""The one way tenantflow reaches a Kubernetes API: an explicit target (kubeconfig + context), never the current one.

``api_client(target)`` builds (and caches) a ``kubernetes.client.ApiClient`` for one context, whose reads retry
transient failures in place (:mod:`activities.common.httpretry`). ``request`` sends one JSON request over that
client and maps HTTP failures to Temporal errors (:func:`activities.common.errors.http_error`);
:mod:`activities.common.kubeobjects` builds every object read and write on it. Every write (``POST``, ``PUT``,
``PATCH``) names the field manager :data:`FIELD_MANAGER` through the documented ``fieldManager`` query parameter
(Kubernetes documentation, "Server-Side Apply", Managers:
https://kubernetes.io/docs/reference/using-api/server-side-apply/#managers), so ``metadata.managedFields`` names
tenantflow instead of the client's User-Agent (``OpenAPI-Generator``); ``DELETE`` takes no field manager
(``DeleteOptions`` has none). ``pod_log`` reads a container's log as text. ``exec_in`` runs a command in one named
container of a pod over the exec websocket (a real apiserver refuses an exec without a container into a
multi-container pod); ``workload_pod`` picks the pod ``kubectl exec deploy/NAME`` (or ``sts/NAME``) would.

Which kubeconfig reaches a target comes from the worker's cluster registry (:mod:`activities.common.clusters`), never
from the contract. Every request has a timeout (:data:`REQUEST_TIMEOUT_S`, connect and read) and every exec a
deadline (``TENANTFLOW_EXEC_TIMEOUT``, :attr:`activities.common.settings.ServiceSettings.exec_timeout_s`, at most 55 s),
so that with the in-place read retries an attempt ends well inside the 60 s heartbeat timeout instead of hanging
on a dead connection.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import urllib3
import websocket
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError, CancelledError
from urllib3 import HTTPHeaderDict

from tenantflow.activities.common import clusters
from tenantflow.activities.common.errors import TRANSIENT, http_error
from tenantflow.activities.common.httpretry import READ_ATTEMPTS, TRANSIENT_STATUS, in_place_wait_s, kube_retries
from tenantflow.activities.common.settings import settings
from tenantflow.models.content_types import JSON, TEXT
from tenantflow.models.targets import KubeTarget

Json = dict[str, Any]
FIELD_MANAGER = "tenantflow"
WRITES = frozenset({"POST", "PUT", "PATCH"})
REQUEST_TIMEOUT_S = (3.0, 8.0)
"""Connect and read timeout of one request; with :data:`activities.common.httpretry.READ_ATTEMPTS` tries of a read and
their backoff, under 50 s."""

# The exec websocket (websocket-client, whose sockets take this default) connects and reads a frame within the
# same bound as a request: kubernetes.stream passes no timeout of its own.
websocket.setdefaulttimeout(sum(REQUEST_TIMEOUT_S))

_lock = threading.Lock()
_clients: dict[tuple[str, str], client.ApiClient] = {}
_configurations: dict[tuple[str, str], tuple[object, client.Configuration]] = {}


def _configuration(target: KubeTarget) -> client.Configuration:
    """The client configuration of ``target``'s cluster, loaded once per kubeconfig file version (parsing a
    kubeconfig took more CPU than the exec that needed it) and again when the file changes (a rotated credential):
    the in-cluster service account, or the kubeconfig's context. A token that expires is refreshed by the
    configuration's own hook. Only the newest version of each kubeconfig and context is kept."""
    entry = clusters.resolve(target)
    key = (str(entry.kubeconfig), entry.context or target.context)
    version: object = None
    if entry.kubeconfig is not None and not entry.in_cluster:
        with contextlib.suppress(OSError):  # a missing file: load_kube_config below says so
            info = entry.kubeconfig.stat()
            version = (info.st_mtime_ns, info.st_size)
    with _lock:
        known = _configurations.get(key)
    if known is not None and known[0] == version:
        return known[1]
    conf = client.Configuration()
    if entry.in_cluster:
        config.load_incluster_config(client_configuration=conf)
    else:
        config.load_kube_config(config_file=str(entry.kubeconfig), context=key[1], client_configuration=conf)
    conf.retries = kube_retries()
    with _lock:
        known = _configurations.get(key)
        if known is not None and known[0] == version:
            return known[1]
        _configurations[key] = (version, conf)
    return conf


def api_client(target: KubeTarget) -> client.ApiClient:
    """One long-lived client per kubeconfig and context, replaced when its kubeconfig file changes."""
    conf = _configuration(target)
    entry = clusters.resolve(target)
    key = (str(entry.kubeconfig), entry.context or target.context)
    with _lock:
        cached = _clients.get(key)
        if cached is None or cached.configuration is not conf:
            cached = _clients[key] = client.ApiClient(configuration=conf)
        return cached


def _message(body: bytes | str | None, fallback: str) -> str:
    try:
        parsed = json.loads(body or "{}")
    except ValueError:
        return fallback
    return str((parsed.get("message") if isinstance(parsed, dict) else None) or fallback)


def _error(target: KubeTarget, status: int, body: bytes | str | None, reason: str, headers: Any) -> ApplicationError:
    retry_after = headers.get("Retry-After") if headers else None
    return http_error(f"kubernetes {target.context}", status, _message(body, reason), retry_after)


def request(
    target: KubeTarget,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = JSON,
    query: list[tuple[str, str]] | None = None,
) -> Json:
    """One JSON request to ``path`` (``/api/v1/...``, ``/apis/<group>/<version>/...``); the decoded answer.
    A write carries ``fieldManager=tenantflow``."""
    return dict(json.loads(_call(target, method, path, body, content_type, query, JSON) or b"{}"))


def _call(
    target: KubeTarget,
    method: str,
    path: str,
    body: Any,
    content_type: str,
    query: list[tuple[str, str]] | None,
    accept: str,
) -> bytes:
    api = api_client(target)
    headers = {"Content-Type": content_type, "Accept": accept}
    params = [*(query or []), *([("fieldManager", FIELD_MANAGER)] if method in WRITES else [])]
    _, url, headers, body, _ = api.param_serialize(
        method, path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    try:
        response = api.call_api(method, url, headers, body, _request_timeout=REQUEST_TIMEOUT_S)
        response.read()
    except ApiException as exc:
        raise _error(target, exc.status or 0, exc.body, str(exc.reason), exc.headers) from None
    except urllib3.exceptions.HTTPError as exc:
        raise ApplicationError(
            f"kubernetes {target.context}: no answer to {method} {path} within "
            f"{REQUEST_TIMEOUT_S[1]:.0f} s ({type(exc).__name__})",
            type=TRANSIENT,
        ) from None
    if response.status >= 400:
        raise _error(target, response.status, response.data, str(response.reason), response.headers)
    return bytes(response.data or b"")


def pod_log(target: KubeTarget, namespace: str, pod: str, container: str) -> str:
    """The log of one container of a pod (``GET /api/v1/namespaces/{ns}/pods/{name}/log?container=``, the
    "read log of the specified Pod" operation of the Kubernetes API reference, Pod v1; what ``kubectl logs``
    reads), as text."""
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
    return _call(target, "GET", path, None, JSON, [("container", container)], TEXT).decode()


class ExecOutput(BaseModel):
    stdout: str
    stderr: str
    exit_code: int


CONTROLLER_KINDS = ("deployments", "statefulsets")
"""What runs a named control-plane workload: SUNK's slurmctld is a Deployment, Slinky's a StatefulSet
(``slurmctld-0``)."""


SET_OPERATORS = {"In": "in", "NotIn": "notin"}
"""``matchExpressions`` operators written as set-based requirements of a ``labelSelector`` query."""


def selector_query(selector: dict[str, Any]) -> str:
    """A ``LabelSelector`` (``matchLabels`` and ``matchExpressions``, meta/v1) as the ``labelSelector`` query the API
    server reads (Kubernetes "Labels and Selectors": ``k=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``,
    every requirement ANDed)."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        if operator in SET_OPERATORS:
            terms.append(f"{key} {SET_OPERATORS[operator]} ({','.join(expression.get('values') or [])})")
        elif operator == "Exists":
            terms.append(key)
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            raise ApplicationError(f"label selector operator {operator!r} is not one of Kubernetes'", type="Invalid")
    return ",".join(terms)


def workload_pod(target: KubeTarget, namespace: str, name: str) -> str:
    """The name of a running pod of the Deployment or StatefulSet ``name`` (what ``kubectl exec deploy/NAME`` or
    ``sts/NAME`` picks), found through the workload's own selector."""
    workload: dict[str, Any] | None = None
    for plural in CONTROLLER_KINDS:
        try:
            workload = request(target, "GET", f"/apis/apps/v1/namespaces/{namespace}/{plural}/{name}")
            break
        except ApplicationError as exc:
            if exc.type != "NotFound":
                raise
    if workload is None:
        raise ApplicationError(
            f"kubernetes {target.context}: no Deployment or StatefulSet {namespace}/{name}; set the workload's name "
            "(SLURM_CONTROLLER for slurmctld)",
            type="NotFound",
            non_retryable=True,
        )
    selector = selector_query((workload.get("spec") or {}).get("selector") or {})
    if not selector:
        raise ApplicationError(
            f"kubernetes {target.context}: {workload.get('kind', 'workload')} {namespace}/{name} has an empty selector",
            type="Invalid",
            non_retryable=True,
        )
    pods = request(target, "GET", f"/api/v1/namespaces/{namespace}/pods", query=[("labelSelector", selector)])
    running = [
        str(p["metadata"]["name"]) for p in pods.get("items") or [] if (p.get("status") or {}).get("phase") == "Running"
    ]
    if not running:
        raise ApplicationError(
            f"kubernetes {target.context}: {workload.get('kind', 'workload')} {namespace}/{name} has no running pod",
            type="NoRunningPod",
        )
    return sorted(running)[0]


def exec_in(
    target: KubeTarget, namespace: str, pod: str, container: str, argv: list[str], timeout_s: int | None = None
) -> ExecOutput:
    """Run ``argv`` in container ``container`` of a pod; return stdout, stderr and the exit code. The exec
    runs for at most ``timeout_s``, capped at (and by default) ``TENANTFLOW_EXEC_TIMEOUT`` (below the heartbeat
    timeout).

    The exec gets an ApiClient of its own: ``kubernetes.stream.stream`` swaps the client's ``call_api`` for a
    websocket call while it runs, so on the shared client a concurrent request from another activity thread
    went out as a websocket handshake ("Handshake status 200 OK"), and two overlapping execs could leave the
    shared client patched for good."""
    attempt = 0
    while True:
        attempt += 1
        with client.ApiClient(configuration=_configuration(target)) as api:
            try:
                resp = stream(
                    client.CoreV1Api(api).connect_get_namespaced_pod_exec,
                    pod,
                    namespace,
                    command=argv,
                    container=container,
                    stderr=True,
                    stdin=False,
                    stdout=True,
                    tty=False,
                    _preload_content=False,
                )
            except ApiException as exc:
                time.sleep(_handshake_refused(target, exc, attempt))
                continue
            cap = settings().exec_timeout_s
            where = f"kubernetes {target.context}: exec of `{' '.join(argv[:4])}` in {namespace}/{pod}"
            return _run(resp, cap if timeout_s is None else min(timeout_s, cap), where)


def _handshake_refused(target: KubeTarget, exc: ApiException, attempt: int) -> float:
    """Seconds to wait before opening the exec again, or the error to fail with.

    A handshake the apiserver refused with a transient status (429, 5xx) never started the command, so it is
    tried again in place like a read (honouring ``Retry-After``); anything else fails the attempt.
    kubernetes' ``websocket_call`` turns every exception into ``ApiException(status=0)``: the refused
    handshake's status and headers are on the websocket exception it wraps, and the activity's cancel, raised
    in its thread during the handshake, stays a cancel (not "apiserver unavailable")."""
    cause = exc.__context__
    if isinstance(cause, CancelledError):
        raise cause from None
    status = int(getattr(cause, "status_code", None) or exc.status or 0)
    headers = HTTPHeaderDict(getattr(cause, "resp_headers", None) or exc.headers or {})
    wait = in_place_wait_s(attempt, headers.get("Retry-After"))
    if status not in TRANSIENT_STATUS or attempt >= READ_ATTEMPTS or wait is None:
        raise _error(target, status, exc.body, str(exc.reason), headers) from None
    return wait


def _run(resp: Any, timeout_s: int, where: str) -> ExecOutput:
    """Read an open exec stream to its end (at most ``timeout_s``).

    A connection that ends without the final ``Status`` frame (channel 3, which the apiserver sends after the
    command exits) lost its answer, and a command still running at ``timeout_s`` has none yet: either may have
    written (a slow ``sacctmgr add`` commits after we stop waiting), so the attempt fails retryably and the
    activity, which reads before it writes, finds out on its next attempt."""
    try:
        try:
            resp.run_forever(timeout=timeout_s)
        except (websocket.WebSocketException, OSError) as exc:
            raise _lost(where, type(exc).__name__) from None
        if resp.is_open():
            raise ApplicationError(
                f"{where}: no exit status within {timeout_s} s (TENANTFLOW_EXEC_TIMEOUT); the command may still "
                "be running and may have written, so the step reads back before it tries again",
                type=TRANSIENT,
            )
        if not resp.peek_channel(ERROR_CHANNEL):
            raise _lost(where, "closed without a status")
        stdout = resp.read_stdout() if resp.peek_stdout() else ""
        stderr = resp.read_stderr() if resp.peek_stderr() else ""
        code = resp.returncode
    finally:
        resp.close()
    return ExecOutput(stdout=stdout, stderr=stderr, exit_code=int(code))


def _lost(where: str, how: str) -> ApplicationError:
    return ApplicationError(
        f"{where}: the connection ended before the command's exit status ({how}); it may have run", type=TRANSIENT
    )
