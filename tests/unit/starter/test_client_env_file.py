"""The CLI reads the worker's configuration file (issue 27): with only ``TENANTFLOW_ENV_FILE`` in the shell, as the
README says, the commands that read records (``apply``, ``tenants``, ``offboard``, ``handover``) find the clusters
the file names, and a file that is not there is a message naming the setting, not a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tenantflow.activities.common import clusters
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.records import records_target


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A shell without the lab's variables; whatever the env file exports is removed again afterwards."""
    for name in ("TENANTFLOW_KUBECONFIG", "TENANTFLOW_CLUSTERS_FILE", "TENANTFLOW_ENV_FILE"):
        monkeypatch.setenv(name, "-")
        monkeypatch.delenv(name)
    try:
        yield monkeypatch
    finally:
        clusters._operator.clear()


def kubeconfig(path: Path, context: str) -> Path:
    cluster = {"name": context, "cluster": {"server": "https://127.0.0.1:1"}}
    user = {"name": "u", "user": {"token": "t"}}
    ctx = {"name": context, "context": {"cluster": context, "user": "u"}}
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [user], "contexts": [ctx]}
    doc["current-context"] = context
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_env_file_alone_names_the_clusters_records_are_read_from(shell: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", "tenant-cluster")
    env_file = tmp_path / "lab.env"
    env_file.write_text(f"TENANTFLOW_KUBECONFIG={config}\n")
    shell.setenv("TENANTFLOW_ENV_FILE", str(env_file))
    target = records_target(None, "tenant-cluster")
    assert target == KubeTarget(kubeconfig=str(config.resolve()), context="tenant-cluster")
    assert clusters.resolve(KubeTarget(context="tenant-cluster")).kubeconfig == config.resolve()


def test_a_missing_env_file_is_a_message_naming_the_setting(shell: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shell.setenv("TENANTFLOW_ENV_FILE", str(tmp_path / "gone.env"))
    with pytest.raises(ContractError, match=r"TENANTFLOW_ENV_FILE=.*gone\.env: no such file"):
        records_target(None, "tenant-cluster")
