"""Bounded I/O on the Kubernetes layer: a request to an API that stops answering fails (retryably) instead of
hanging past the heartbeat timeout; injected latency well under the timeout costs no retry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.clusters import CLUSTERS_FILE_ENV, KUBECONFIG_ENV
from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.models.targets import KubeTarget

TARGET = KubeTarget(context="slow-cluster")
NAMESPACE = "/api/v1/namespaces/tenant-foo"


@pytest_asyncio.fixture
async def slow_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[httpx.AsyncClient]:
    """An emulated cluster registered as ``slow-cluster``; yields a client of its ``/_lab`` routes."""
    store = Store()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-foo"}})
    runner, url = await start_kube_api(build_app(store, name="slow-cluster"))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", [KubeContext("slow-cluster", url, "t")])
    monkeypatch.delenv(CLUSTERS_FILE_ENV, raising=False)
    monkeypatch.setenv(KUBECONFIG_ENV, str(kubeconfig))
    async with httpx.AsyncClient(base_url=url) as lab:
        yield lab
    await runner.cleanup()


async def latency(lab: httpx.AsyncClient, ms: int) -> None:
    (await lab.put("/_lab/faults", json={"rules": [{"path": "^/api", "latency_ms": ms}]})).raise_for_status()
    (await lab.delete("/_lab/requests")).raise_for_status()


async def get_namespace() -> Any:
    return await asyncio.wait_for(asyncio.to_thread(kubeclient.request, TARGET, "GET", NAMESPACE), 40)


async def test_latency_below_the_timeout_costs_no_retry(slow_api: httpx.AsyncClient) -> None:
    await latency(slow_api, 300)
    assert (await get_namespace())["metadata"]["name"] == "tenant-foo"
    journal = (await slow_api.get("/_lab/requests")).json()
    assert journal["injected"] == {"latency": 1}, journal


async def test_a_hung_request_fails_retryably_instead_of_hanging(
    slow_api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubeclient, "REQUEST_TIMEOUT_S", (1.0, 1.0))
    await latency(slow_api, 30_000)
    with pytest.raises(ApplicationError, match="kubernetes slow-cluster: no answer to GET") as failed:
        await get_namespace()
    assert failed.value.type == TRANSIENT and not failed.value.non_retryable
