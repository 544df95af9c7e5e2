"""Write a kubeconfig with one context per emulated cluster (bearer-token users), and read one back.

Over plain ``http://`` kubectl sends no credentials (so every request is the
default admin); give a context ``ca_pem`` and an ``https://`` server to have its
token, and thus its policy, apply to kubectl too.
"""

from __future__ import annotations

import base64
import os
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


class KubeconfigError(ValueError):
    """A kubeconfig the lab's tools cannot use; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Endpoint:
    """What a context of a kubeconfig connects with: the server, the CA to trust (None: the system's) and the token."""

    server: str
    token: str
    ca_pem: bytes | None


def _entry(config: dict[str, object], kind: str, name: str, path: str) -> dict[str, object]:
    entries = config.get(f"{kind}s") or []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(kind), dict):
            return dict(entry[kind])
    raise KubeconfigError(f"{path}: no {kind} named {name!r}; add it to {kind}s or pass another --context")


def read_endpoint(kubeconfig: str | None, context: str | None) -> Endpoint:
    """The server, CA and bearer token of ``context`` (default: the current context) in ``kubeconfig`` (default:
    ``$KUBECONFIG``, else ``~/.kube/config``), the fields kubectl reads
    (https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/): ``server``,
    ``certificate-authority-data`` or ``certificate-authority``, and a user's ``token`` or ``tokenFile``. Users of
    other kinds (client certificates, exec plugins) are refused: the lab issues bearer tokens only."""
    path = (
        kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0] or os.path.expanduser("~/.kube/config")
    )
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"{path}: cannot read the kubeconfig: {exc}") from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig (expected a mapping with clusters, users and contexts)")
    name = context or str(config.get("current-context") or "")
    if not name:
        raise KubeconfigError(f"{path}: no current-context; pass --context")
    chosen = _entry(config, "context", name, path)
    cluster = _entry(config, "cluster", str(chosen.get("cluster")), path)
    user = _entry(config, "user", str(chosen.get("user")), path)
    if "server" not in cluster:
        raise KubeconfigError(f"{path}: cluster {chosen.get('cluster')!r} has no server; add its URL")
    try:
        if "certificate-authority-data" in cluster:
            ca_pem: bytes | None = base64.b64decode(str(cluster["certificate-authority-data"]))
        elif "certificate-authority" in cluster:
            ca_pem = Path(str(cluster["certificate-authority"])).read_bytes()
        else:
            ca_pem = None
        if "token" in user:
            token: str | None = str(user["token"])
        elif "tokenFile" in user:
            token = Path(str(user["tokenFile"])).read_text().strip()
        else:
            token = None
    except OSError as exc:
        raise KubeconfigError(f"{path}: cannot read a file it names: {exc}") from None
    if token is None:
        raise KubeconfigError(
            f"{path}: user {chosen.get('user')!r} has no token or tokenFile; the lab's users are "
            "bearer tokens (client certificates and exec plugins are not read)"
        )
    return Endpoint(str(cluster["server"]), token, ca_pem)
