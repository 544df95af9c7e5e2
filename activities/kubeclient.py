"""Kubernetes clients for an explicit target (kubeconfig + context), never the current context.

``api_client(target)`` builds (and caches) a ``kubernetes.client.ApiClient`` for
one context, whose reads retry transient failures in place (:mod:`activities.httpretry`).
``call`` runs a client call and maps ``ApiException`` to Temporal errors;
``get_or_none`` treats 404 as absence. ``exec_in`` runs a command in a pod (or the first
pod of a Deployment) over the exec websocket.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from tenantflow.activities.errors import http_error
from tenantflow.activities.httpretry import kube_retries
from tenantflow.models.targets import KubeTarget

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[tuple[str, str], client.ApiClient] = {}


def _new_client(target: KubeTarget) -> client.ApiClient:
    conf = client.Configuration()
    config.load_kube_config(config_file=target.kubeconfig, context=target.context, client_configuration=conf)
    conf.retries = kube_retries()
    return client.ApiClient(configuration=conf)


def api_client(target: KubeTarget) -> client.ApiClient:
    key = (target.kubeconfig, target.context)
    with _lock:
        cached = _clients.get(key)
        if cached is None:
            cached = _clients[key] = _new_client(target)
        return cached


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
        raise ApplicationError(f"kubernetes {target.context}: deployment {namespace}/{deployment} has no running pod",
                               type="NoRunningPod")
    return sorted(running)[0]


def exec_in(target: KubeTarget, namespace: str, pod: str, argv: list[str],
            container: str | None = None, timeout_s: int = 120) -> ExecOutput:
    """Run ``argv`` in a pod; return stdout, stderr and the exit code.

    The exec gets an ApiClient of its own: ``kubernetes.stream.stream`` swaps the client's ``call_api`` for a
    websocket call while it runs, so on the shared client a concurrent request from another activity thread
    went out as a websocket handshake ("Handshake status 200 OK"), and two overlapping execs could leave the
    shared client patched for good."""
    kwargs: dict[str, Any] = {"command": argv, "stderr": True, "stdin": False, "stdout": True, "tty": False,
                              "_preload_content": False}
    if container:
        kwargs["container"] = container
    with _new_client(target) as api:
        resp = call(target, stream, client.CoreV1Api(api).connect_get_namespaced_pod_exec, pod, namespace, **kwargs)
        try:
            resp.run_forever(timeout=timeout_s)
            stdout = resp.read_stdout() if resp.peek_stdout() else ""
            stderr = resp.read_stderr() if resp.peek_stderr() else ""
            code = resp.returncode
        finally:
            resp.close()
    return ExecOutput(stdout=stdout, stderr=stderr, exit_code=int(code if code is not None else -1))
