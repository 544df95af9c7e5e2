"""The worker's registry of Kubernetes clusters: a contract names a cluster, the worker's configuration alone
says which kubeconfig (and context) reaches it.

Every context of the worker's own kubeconfig ``TENANTFLOW_KUBECONFIG`` (the lab's ``lab.env`` sets it) is a
cluster of the same name; ``TENANTFLOW_CLUSTERS_FILE`` names a YAML file mapping further cluster names (or the
same, which it then overrides) to ``{kubeconfig: PATH, context: NAME}`` (``context`` defaults to the cluster's
name) or to ``{in_cluster: true}`` (the worker's service account). A target naming an unknown cluster, or
carrying a kubeconfig path other than the one registered, is refused before anything is loaded: a kubeconfig can
run exec plugins, so a path from a contract (or the HTTP API) must never reach ``load_kube_config``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ApplicationError

from tenantflow.models.targets import KubeTarget

CLUSTERS_FILE_ENV = "TENANTFLOW_CLUSTERS_FILE"
KUBECONFIG_ENV = "TENANTFLOW_KUBECONFIG"


class RegisteredCluster(BaseModel):
    """How the worker reaches one named cluster."""

    kubeconfig: Path | None = None
    context: str | None = None
    in_cluster: bool = False


def _refuse(message: str) -> ApplicationError:
    return ApplicationError(message, type="UnknownCluster", non_retryable=True)


def _from_file(path: Path) -> dict[str, RegisteredCluster]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return {str(name): RegisteredCluster.model_validate(entry) for name, entry in dict(data).items()}
    except (OSError, yaml.YAMLError, ValidationError, TypeError, ValueError) as exc:
        raise _refuse(
            f"{CLUSTERS_FILE_ENV}={path}: not a cluster registry ({exc}); expected "
            "NAME: {kubeconfig: PATH, context: CONTEXT} or NAME: {in_cluster: true}"
        ) from None


def _from_kubeconfig(path: Path) -> dict[str, RegisteredCluster]:
    try:
        contexts = (yaml.safe_load(path.read_text()) or {}).get("contexts") or []
    except (OSError, yaml.YAMLError) as exc:
        raise _refuse(f"{KUBECONFIG_ENV}={path}: cannot read the worker's kubeconfig ({exc})") from None
    return {str(c["name"]): RegisteredCluster(kubeconfig=path, context=str(c["name"])) for c in contexts}


@lru_cache(maxsize=8)
def _read(kind: str, path: Path, _mtime_ns: int) -> dict[str, RegisteredCluster]:
    return _from_file(path) if kind == CLUSTERS_FILE_ENV else _from_kubeconfig(path)


def registry() -> dict[str, RegisteredCluster]:
    """The clusters this worker may reach, from its environment (re-read when a file changes)."""
    found: dict[str, RegisteredCluster] = {}
    sources = ((KUBECONFIG_ENV, os.environ.get(KUBECONFIG_ENV)), (CLUSTERS_FILE_ENV, os.environ.get(CLUSTERS_FILE_ENV)))
    for kind, value in sources:
        if value:
            path = Path(value)
            try:
                mtime = path.stat().st_mtime_ns
            except OSError as exc:
                raise _refuse(f"{kind}={path}: {exc.strerror}") from None
            found.update(_read(kind, path, mtime))
    return found


def resolve(target: KubeTarget) -> RegisteredCluster:
    """The registry's entry for ``target``; refuses an unknown cluster or a kubeconfig path the worker did not
    configure, without reading the path."""
    clusters = registry()
    entry = clusters.get(target.context)
    if entry is None:
        known = ", ".join(sorted(clusters)) or (
            f"none: set {CLUSTERS_FILE_ENV} or {KUBECONFIG_ENV}, or TENANTFLOW_ENV_FILE naming a file that sets one, "
            "in the environment of this process"
        )
        raise _refuse(
            f"cluster {target.context!r} is not in the cluster registry of this process (the worker's; "
            f"known: {known}); name a registered cluster in the contract's cluster.context"
        )
    if target.kubeconfig is not None and (
        entry.kubeconfig is None or Path(target.kubeconfig).resolve() != entry.kubeconfig.resolve()
    ):
        raise _refuse(
            f"cluster.kubeconfig {target.kubeconfig!r} is not the kubeconfig the worker has for "
            f"cluster {target.context!r}; a contract names a cluster, it cannot choose a kubeconfig "
            "file: remove cluster.kubeconfig"
        )
    return entry
