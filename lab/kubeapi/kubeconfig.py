"""Write a kubeconfig with one context per emulated cluster (bearer-token users).

Over plain ``http://`` kubectl sends no credentials (so every request is the
default admin); give a context ``ca_pem`` and an ``https://`` server to have its
token, and thus its policy, apply to kubectl too.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class KubeContext:
    """A context: its name (also used for the cluster and user entries), URL, token, namespace."""

    name: str
    server: str
    token: str
    namespace: str = "default"
    user: str = ""
    ca_pem: bytes | None = None


def _cluster(context: KubeContext) -> dict[str, str]:
    cluster = {"server": context.server}
    if context.ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(context.ca_pem).decode()
    return cluster


def kubeconfig_dict(contexts: list[KubeContext], current: str | None = None) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": current or (contexts[0].name if contexts else ""),
        "clusters": [{"name": c.name, "cluster": _cluster(c)} for c in contexts],
        "users": [{"name": c.user or c.name, "user": {"token": c.token}} for c in contexts],
        "contexts": [
            {"name": c.name, "context": {"cluster": c.name, "user": c.user or c.name, "namespace": c.namespace}}
            for c in contexts
        ],
    }


def write_kubeconfig(path: Path, contexts: list[KubeContext], current: str | None = None) -> Path:
    """Write the kubeconfig (mode 0600) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig_dict(contexts, current), sort_keys=False))
    path.chmod(0o600)
    return path
