"""Write a kubeconfig with one context per emulated cluster (bearer-token users, plain HTTP)."""

from __future__ import annotations

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


def kubeconfig_dict(contexts: list[KubeContext], current: str | None = None) -> dict[str, object]:
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "current-context": current or (contexts[0].name if contexts else ""),
        "clusters": [{"name": c.name, "cluster": {"server": c.server}} for c in contexts],
        "users": [{"name": c.user or c.name, "user": {"token": c.token}} for c in contexts],
        "contexts": [{"name": c.name, "context": {"cluster": c.name, "user": c.user or c.name,
                                                  "namespace": c.namespace}} for c in contexts],
    }


def write_kubeconfig(path: Path, contexts: list[KubeContext], current: str | None = None) -> Path:
    """Write the kubeconfig (mode 0600) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig_dict(contexts, current), sort_keys=False))
    path.chmod(0o600)
    return path
