"""Kubernetes clients for an explicit target (kubeconfig + context), never the current context.

``api_client(target)`` builds (and caches) a ``kubernetes.client.ApiClient`` for
one context. ``call`` runs a client call and maps ``ApiException`` to Temporal
errors; ``get_or_none`` treats 404 as absence. ``exec_in`` runs a command in a
pod (or the first pod of a Deployment) over the exec websocket.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.stream import stream
from pydantic import BaseModel

from activities.errors import http_error
from models.targets import KubeTarget

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[tuple[str, str], client.ApiClient] = {}


def api_client(target: KubeTarget) -> client.ApiClient:
    key = (target.kubeconfig, target.context)
    with _lock:
        cached = _clients.get(key)
        if cached is None:
            cached = config.new_client_from_config(config_file=target.kubeconfig, context=target.context)
            _clients[key] = cached
        return cached


def dynamic(target: KubeTarget) -> DynamicClient:
    return DynamicClient(api_client(target))


def _message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
    except ValueError:
        return str(exc.reason)
    return str(body.get("message") or exc.reason)


def call(target: KubeTarget, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        retry_after = (exc.headers or {}).get("Retry-After") if exc.headers else None
        raise http_error(f"kubernetes {target.context}", exc.status or 0, _message(exc), retry_after) from None


def get_or_none(target: KubeTarget, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        if exc.status == 404:
            return None
        retry_after = (exc.headers or {}).get("Retry-After") if exc.headers else None
        raise http_error(f"kubernetes {target.context}", exc.status or 0, _message(exc), retry_after) from None


class ExecOutput(BaseModel):
    stdout: str
    stderr: str
    exit_code: int


def deployment_pod(target: KubeTarget, namespace: str, deployment: str) -> str:
    """The name of a running pod of ``deployment`` (what ``kubectl exec deploy/NAME`` picks)."""
    apps = client.AppsV1Api(api_client(target))
    core = client.CoreV1Api(api_client(target))
    dep = call(target, apps.read_namespaced_deployment, deployment, namespace)
    labels = dep.spec.selector.match_labels or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = call(target, core.list_namespaced_pod, namespace, label_selector=selector)
    running = [str(p.metadata.name) for p in pods.items
               if p.metadata is not None and p.status is not None and p.status.phase == "Running"]
    if not running:
        raise http_error(f"kubernetes {target.context}", 503,
                         f"deployment {namespace}/{deployment} has no running pod")
    return sorted(running)[0]


def exec_in(target: KubeTarget, namespace: str, pod: str, argv: list[str],
            container: str | None = None, timeout_s: int = 120) -> ExecOutput:
    """Run ``argv`` in a pod; return stdout, stderr and the exit code."""
    core = client.CoreV1Api(api_client(target))
    kwargs: dict[str, Any] = {"command": argv, "stderr": True, "stdin": False, "stdout": True, "tty": False,
                              "_preload_content": False}
    if container:
        kwargs["container"] = container
    resp = call(target, stream, core.connect_get_namespaced_pod_exec, pod, namespace, **kwargs)
    try:
        resp.run_forever(timeout=timeout_s)
        stdout = resp.read_stdout() if resp.peek_stdout() else ""
        stderr = resp.read_stderr() if resp.peek_stderr() else ""
        code = resp.returncode
    finally:
        resp.close()
    return ExecOutput(stdout=stdout, stderr=stderr, exit_code=int(code if code is not None else -1))
