"""Kubeconfig files come from the worker's cluster registry only: a contract naming a kubeconfig (whose exec
plugin would run on the worker host) is refused at validation and by the worker, and the plugin never runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
import yaml
from kubernetes import client, config
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.clusters import CLUSTERS_FILE_ENV, KUBECONFIG_ENV
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import ContractError, parse_contract
from tests.workflows.contract import EXAMPLES


def evil_kubeconfig(path: Path, pwned: Path) -> Path:
    """A kubeconfig whose exec credential plugin writes ``pwned`` when the kubeconfig is loaded."""
    credential = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "x"}}'
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "tenant-cluster",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1",
                                "command": "/bin/sh",
                                "args": ["-c", f"touch {pwned}; echo '{credential}'"],
                                "interactiveMode": "Never",
                            }
                        },
                    }
                ],
                "contexts": [{"name": "tenant-cluster", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


@pytest.fixture
def evil(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    pwned = tmp_path / "pwned"
    yield evil_kubeconfig(tmp_path / "evil", pwned), pwned


@pytest_asyncio.fixture
async def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """An emulated cluster registered as ``tenant-cluster`` in a TENANTFLOW_CLUSTERS_FILE."""
    store = Store()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-foo"}})
    runner, url = await start_kube_api(build_app(store, name="registered"))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", [KubeContext("lab-admin", url, "t")])
    registry = tmp_path / "clusters.yaml"
    registry.write_text(yaml.safe_dump({"tenant-cluster": {"kubeconfig": str(kubeconfig), "context": "lab-admin"}}))
    monkeypatch.setenv(CLUSTERS_FILE_ENV, str(registry))
    monkeypatch.delenv(KUBECONFIG_ENV, raising=False)
    yield kubeconfig
    await runner.cleanup()


def test_the_evil_kubeconfig_is_live(evil: tuple[Path, Path]) -> None:
    """Loading it directly runs the plugin: what the checks below prevent is real."""
    path, pwned = evil
    config.load_kube_config(
        config_file=str(path), context="tenant-cluster", client_configuration=client.Configuration()
    )
    assert pwned.exists()


def test_a_contract_with_a_kubeconfig_path_is_refused_at_validation(evil: tuple[Path, Path]) -> None:
    path, pwned = evil
    data = yaml.safe_load((EXAMPLES / "tenant-foo.yaml").read_text())
    data["cluster"]["kubeconfig"] = str(path)
    with pytest.raises(ContractError, match=r"cluster\.kubeconfig: a contract cannot choose a kubeconfig file"):
        parse_contract(TenantContract, data, "evil.yaml")
    assert not pwned.exists()


async def test_the_worker_loads_only_registered_kubeconfigs(evil: tuple[Path, Path], registered: Path) -> None:
    path, pwned = evil
    namespace = "/api/v1/namespaces/tenant-foo"
    found = await asyncio.to_thread(kubeclient.request, KubeTarget(context="tenant-cluster"), "GET", namespace)
    assert found["metadata"]["name"] == "tenant-foo"
    smuggled = KubeTarget(context="tenant-cluster", kubeconfig=str(path))
    with pytest.raises(ApplicationError, match="is not the kubeconfig the worker has") as refused:
        await asyncio.to_thread(kubeclient.request, smuggled, "GET", namespace)
    assert refused.value.non_retryable
    with pytest.raises(
        ApplicationError,
        match=r"cluster 'elsewhere' is not in the cluster registry of this process "
        r"\(the worker's; known: tenant-cluster\)",
    ) as unknown:
        await asyncio.to_thread(kubeclient.request, KubeTarget(context="elsewhere"), "GET", namespace)
    assert unknown.value.non_retryable
    assert not pwned.exists()


async def test_a_rewritten_kubeconfig_is_followed_by_the_long_lived_client(registered: Path) -> None:
    """A rotated kubeconfig (here: the context moved to another API server) reaches the next request; the worker
    does not keep talking with what the file said when it was first read."""
    store = Store()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "moved"}})
    runner, url = await start_kube_api(build_app(store, name="rotated"))
    target = KubeTarget(context="tenant-cluster")
    try:
        await asyncio.to_thread(kubeclient.request, target, "GET", "/api/v1/namespaces/tenant-foo")
        write_kubeconfig(registered, [KubeContext("lab-admin", url, "rotated-token")])
        found = await asyncio.to_thread(kubeclient.request, target, "GET", "/api/v1/namespaces/moved")
    finally:
        await runner.cleanup()
    assert found["metadata"]["name"] == "moved"
