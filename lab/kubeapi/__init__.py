"""Kubernetes API emulator of the lab: a stateful in-memory apiserver over real HTTP.

See :mod:`lab.kubeapi.store` for the store (and its dump/restore across a lab restart),
:mod:`lab.kubeapi.events` for the subscription contract and :mod:`lab.kubeapi.server` for the HTTP app.
"""

from tenantflow.lab.kubeapi.auth import PolicyRule, User, parse_policies
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.podexec import ExecHandler, ExecResult
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import ObjectKey, Store

__all__ = [
    "ApiError",
    "ExecHandler",
    "ExecResult",
    "KubeContext",
    "ObjectKey",
    "PolicyRule",
    "Store",
    "User",
    "build_app",
    "parse_policies",
    "start_kube_api",
    "write_kubeconfig",
]
