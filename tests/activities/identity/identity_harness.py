"""Fixtures: the Authentik stand-in on a real socket, syncing into a real slapd, and a tenant contract.

Activities are sync and talk HTTP to a server in this event loop, so tests run them in a thread via
:func:`run_activity`; the settings point at the test servers through environment variables.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.settings import settings
from tenantflow.lab.authentik.app import build_app
from tenantflow.lab.authentik.slapd_sink import SlapdSink
from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT
from tenantflow.lab.daemons.process import free_port, stop_all
from tenantflow.lab.daemons.slapd import SlapdHandle, start_slapd
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract, TenantUser

T = TypeVar("T")
TOKEN = "identity-test-token"


def ssh_key(comment: str) -> str:
    public = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    return f"{public.decode()} {comment}"


def make_contract(
    slug: str = "tenant-foo", usernames: tuple[str, ...] = ("alice", "bob", "carol"), adopt: tuple[str, ...] = ()
) -> TenantContract:
    users = [
        TenantUser(
            username=name,
            name=f"{name.title()} Researcher",
            email=f"{name}@{slug}.example",
            ssh_keys=[ssh_key(f"{name}@laptop"), ssh_key(f"{name}@desktop")],
            adopt_existing=name in adopt,
        )
        for name in usernames
    ]
    return TenantContract(
        slug=slug, display_name=slug.title(), users=users, cluster=KubeTarget(context="tenant-cluster")
    )


async def run_activity(
    fn: Callable[..., T], *args: Any, workflow_id: str = "test", workflow_type: str = "TenantOnboarding"
) -> T:
    """Run a sync activity in a worker thread, as the worker's thread pool would, for a workflow."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=workflow_id, workflow_type=workflow_type)
    return await asyncio.to_thread(env.run, fn, *args)


@dataclass
class IdentityLab:
    url: str
    api: httpx.AsyncClient
    slapd: SlapdHandle

    async def writes(self) -> int:
        return int((await self.api.get(self.url + "/_lab/requests")).json()["writes"])

    async def reset_journal(self) -> None:
        await self.api.delete(self.url + "/_lab/requests")

    async def get(self, path: str, **params: Any) -> Any:
        response = await self.api.get(self.url + "/api/v3" + path, params=params)
        response.raise_for_status()
        return response.json()

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        response = await self.api.post(self.url + "/api/v3" + path, json=body)
        response.raise_for_status()
        return response.json() if response.content else None

    async def patch(self, path: str, body: dict[str, Any]) -> Any:
        response = await self.api.patch(self.url + "/api/v3" + path, json=body)
        response.raise_for_status()
        return response.json()

    async def user(self, username: str) -> dict[str, Any]:
        return dict((await self.get("/core/users/", username=username))["results"][0])

    async def group(self, name: str) -> dict[str, Any] | None:
        found = (await self.get("/core/groups/", name=name))["results"]
        return dict(found[0]) if found else None


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[SlapdHandle]:
    if os.geteuid() != 0 or shutil.which("slapd") is None:
        pytest.skip("needs root and slapd")
    handle = start_slapd(tmp_path, free_port())
    yield handle
    stop_all(tmp_path)


@pytest.fixture
def authentik_version() -> str:
    """The Authentik release the stand-in plays; a test parametrizes this name to choose another."""
    return AUTHENTIK_CURRENT


@pytest.fixture
async def identity_lab(
    slapd: SlapdHandle, monkeypatch: pytest.MonkeyPatch, authentik_version: str
) -> AsyncIterator[IdentityLab]:
    sink = SlapdSink(slapd.url, slapd.admin_dn, slapd.admin_password)
    runner = web.AppRunner(build_app(TOKEN, directory=sink, version=authentik_version))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    for key, value in {
        "AUTHENTIK_URL": url,
        "AUTHENTIK_TOKEN": TOKEN,
        "LDAP_URL": slapd.url,
        "LDAP_BASE_DN": slapd.base_dn,
        "LDAP_BIND_DN": slapd.bind_dn,
        "LDAP_BIND_PASSWORD": slapd.bind_password,
        "TENANTFLOW_POLL_INTERVAL": "0.05",
        "LDAP_VERIFY_BUDGET_S": "2",
    }.items():
        monkeypatch.setenv(key, value)
    settings.cache_clear()
    api = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        yield IdentityLab(url=url, api=api, slapd=slapd)
    finally:
        await api.aclose()
        await runner.cleanup()
        sink.close()
        settings.cache_clear()


@pytest.fixture
async def with_parent(identity_lab: IdentityLab) -> IdentityLab:
    """The lab with the platform group ``tenants`` in place and an empty journal."""
    await identity_lab.post("/core/groups/", {"name": "tenants"})
    await identity_lab.reset_journal()
    return identity_lab
