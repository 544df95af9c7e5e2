"""Fixtures: the Weka stand-in and the Kubernetes API stand-in on real sockets, settings pointed at them, with
the csi-wekafs stand-in (:mod:`lab.controllers.csi`) acting on both.

Activities are sync and talk HTTP to servers in this event loop, so tests run them in a thread via
:func:`run_activity`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from aiohttp import web
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.settings import settings
from tenantflow.activities.records import steps as records
from tenantflow.lab.controllers.csi import CsiWekafs
from tenantflow.lab.controllers.hub import reconcile_on_events
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app as build_kube_app
from tenantflow.lab.kubeapi.server import start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.weka.app import TiB
from tenantflow.lab.weka.app import build_app as build_weka_app
from tenantflow.lab.weka.service import SERVICE_KEY, WekaService
from tenantflow.models.onboarding import Facts, UserFacts
from tenantflow.models.records import RecordStatus, RunStamp, TenantRecord
from tenantflow.models.results import EnsureResult
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import Storage, StorageIsolation, TenantContract, TenantUser

T = TypeVar("T")
USERNAME, PASSWORD = "admin", "weka-platform-password"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"


GROUP_GID = 5000
UIDS = {"alice": 10001, "bob": 10002}


async def run_activity(fn: Callable[..., T], *args: Any, env: ActivityEnvironment | None = None) -> T:
    return await asyncio.to_thread((env or ActivityEnvironment()).run, fn, *args)


async def record_tenant(
    contract: TenantContract, applied: list[EnsureResult], status: RecordStatus = RecordStatus.onboarded
) -> None:
    """Store the tenant's record as a finished onboarding (or offboarding) would, with what it applied."""
    stamp = RunStamp(
        workflow_id=f"tenant/{contract.slug}",
        run_id=uuid.uuid4().hex,
        plan_hash="abc123",
        approver="dana",
        recorded_at=datetime.now(UTC),
    )
    record = TenantRecord(contract=contract, run=stamp, status=status, applied=applied)
    await run_activity(records.record_tenant, record)


def identity_facts(usernames: tuple[str, ...] = ("alice", "bob")) -> Facts:
    """What identity.group and identity.users would have learned (the owners of the new directories)."""
    return Facts(
        group_gid=GROUP_GID,
        users={
            u: UserFacts(pk=i, uid_number=UIDS.get(u, 10100 + i), gid_number=GROUP_GID) for i, u in enumerate(usernames)
        },
    )


@dataclass
class StorageLab:
    weka_url: str
    kube_url: str
    kubeconfig: Path
    store: Store
    api: httpx.AsyncClient
    weka: WekaService

    def contract(
        self, isolation: StorageIsolation = StorageIsolation.strict_org, slug: str = "tenant-foo", **storage: Any
    ) -> TenantContract:
        users = [
            TenantUser(username=n, name=n.title(), email=f"{n}@foo.example", ssh_keys=[SSH_KEY])
            for n in ("alice", "bob")
        ]
        return TenantContract(
            slug=slug,
            display_name="Foo",
            users=users,
            storage=Storage(isolation=isolation, **storage),
            cluster=KubeTarget(context="tenant-cluster"),
        )

    async def writes(self) -> int:
        """Weka writes, not counting ``POST /login`` (a session, not a change of state)."""
        entries = (await self.api.get(self.weka_url + "/_lab/requests")).json()["requests"]
        return sum(
            1
            for e in entries
            if e["method"] in {"POST", "PUT", "PATCH", "DELETE"} and not e["path"].startswith("/api/v2/login")
        )

    async def kube_writes(self) -> int:
        return int((await self.api.get(self.kube_url + "/_lab/requests")).json()["writes"])

    async def reset(self) -> None:
        for url in (self.weka_url, self.kube_url):
            await self.api.delete(url + "/_lab/requests")

    async def snapshot(self) -> Any:
        return (await self.api.get(self.weka_url + "/_lab/snapshot")).json()

    async def kube_snapshot(self) -> Any:
        return (await self.api.get(self.kube_url + "/_lab/snapshot")).json()


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture
def weka_total_bytes() -> int:
    return 2048 * TiB


@pytest.fixture
async def storage_lab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weka_total_bytes: int
) -> AsyncIterator[StorageLab]:
    weka_app = build_weka_app(USERNAME, PASSWORD, total_bytes=weka_total_bytes)
    weka_runner, weka_url = await _serve(weka_app)
    store = Store()
    for ns in ("tenant-foo", "tenant-bar", "tenantflow-system"):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kube_runner, kube_url = await start_kube_api(build_kube_app(store, name="tenant-cluster"))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", [KubeContext("tenant-cluster", kube_url, "t")])
    for key, value in {
        "TENANTFLOW_KUBECONFIG": str(kubeconfig),  # the worker's cluster registry
        "WEKA_URL": weka_url,
        "WEKA_USERNAME": USERNAME,
        "WEKA_PASSWORD": PASSWORD,
        "WEKA_ORG": "Root",
    }.items():
        monkeypatch.setenv(key, value)
    settings.cache_clear()
    api = httpx.AsyncClient()
    csi = asyncio.create_task(
        reconcile_on_events([store], CsiWekafs(store, weka_app[SERVICE_KEY]).reconcile, period_s=0.2)
    )
    try:
        yield StorageLab(weka_url, kube_url, kubeconfig, store, api, weka_app[SERVICE_KEY])
    finally:
        csi.cancel()
        await asyncio.gather(csi, return_exceptions=True)
        await api.aclose()
        await weka_runner.cleanup()
        await kube_runner.cleanup()
        settings.cache_clear()
