"""The CLI reads the worker's configuration file (issue 27): with only ``TENANTFLOW_ENV_FILE`` in the shell, as the
README says, the commands that read records (``apply``, ``tenants``, ``offboard``, ``handover``) find the clusters
the file names, and a file that is not there is a message naming the setting, not a traceback."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tenantflow.activities.common import clusters
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.records import records_target
from tests.starter.conftest import CLI
from tests.workflows.contract import EXAMPLES


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


def test_plan_without_the_services_settings_says_which_to_set(tmp_path: Path) -> None:
    """``plan`` still reads every service from the CLI's process (issue 27 would move it to the worker): without
    their settings it says which to set, in one message, not a traceback."""
    shell = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TEMPORAL_ADDRESS": "127.0.0.1:1"}
    done = subprocess.run(
        [CLI, "plan", str(EXAMPLES / "tenant-foo.yaml")], env=shell, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("cannot plan here: UnknownCluster: cluster 'tenant-cluster'"), done.stderr
    assert "export TENANTFLOW_ENV_FILE" in done.stderr, done.stderr
