"""Fixtures: the seeded tenant cluster served over HTTP with the lab's controllers, and a real slapd.

``lab`` (per test) starts a fresh :class:`lab.kubeapi.store.Store` seeded by
:func:`lab.seed.seed_tenant_cluster`, serves it with the kube emulator on a
background event loop, runs the reservation operator and login controller on that
loop, routes ``pods/exec`` through ``LabContext.exec_handler_for`` like ``lab.serve``
does, and writes a kubeconfig whose ``tenant-cluster`` context points at it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers import login as login_controller
from tenantflow.lab.controllers import reservation as reservation_controller
from tenantflow.lab.daemons import ldap_tree
from tenantflow.lab.daemons.process import free_port, stop_all
from tenantflow.lab.daemons.slapd import SlapdHandle, start_slapd
from tenantflow.lab.daemons.slurm import SlurmHandle, start_slurm
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import seed_tenant_cluster
from tenantflow.lab.serve import dispatch_exec
from tenantflow.models.targets import KubeTarget

CONTEXT = "tenant-cluster"


@dataclass
class Lab:
    store: Store
    url: str
    target: KubeTarget
    ctx: LabContext

    def requests(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.url}/_lab/requests").json()["requests"])

    def writes(self) -> list[str]:
        return [
            f"{r['method']} {r['path']}" for r in self.requests() if r["method"] in ("POST", "PUT", "PATCH", "DELETE")
        ]

    def reset_journal(self) -> None:
        httpx.delete(f"{self.url}/_lab/requests")

    def node_labels(self, label: str = "reserved.tenant") -> dict[str, str]:
        return {
            n["metadata"]["name"]: n["metadata"]["labels"][label]
            for n in self.store.list("", "nodes")
            if label in n["metadata"].get("labels", {})
        }


@pytest.fixture(scope="session")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlapdHandle | None]:
    """A real slapd holding tenant-foo's users and group, or None when slapd is not installed."""
    if shutil.which("slapd") is None and not Path("/usr/sbin/slapd").exists():
        yield None
        return
    handle = start_slapd(tmp_path_factory.mktemp("slapd"), free_port())
    with handle.connect_admin() as conn:
        for pk, name in enumerate(("alice", "bob", "carol"), start=147):
            ldap_tree.upsert_user(
                conn,
                ldap_tree.LdapUser(
                    username=name, name=f"{name.title()} Researcher", uid_number=2000 + pk, gid_number=4099
                ),
            )
        ldap_tree.upsert_group(
            conn, ldap_tree.LdapGroup(name="tenant-foo", gid_number=4099, members=("alice", "bob", "carol"))
        )
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmHandle]:
    """The real Slurm stack with partition tenant-foo on gpu-[01-08] (skipped when not installed)."""
    missing = [b for b in ("munged", "mariadbd", "slurmdbd", "slurmctld", "sinfo") if shutil.which(b) is None]
    if missing or os.geteuid() != 0:
        pytest.skip(f"the real Slurm daemons need root and {', '.join(missing) or 'nothing else'}")
    state_dir = tmp_path_factory.mktemp("slurm")
    handle = start_slurm(state_dir)
    handle.write_partitions("PartitionName=tenant-foo Nodes=gpu-[01-08] State=UP MaxTime=24:00:00\n")
    handle.reconfigure()
    yield handle
    stop_all(state_dir)


@pytest.fixture
def lab(tmp_path: Path, slapd: SlapdHandle | None) -> Iterator[Lab]:
    store = Store()
    seed_tenant_cluster(store, ldap_bind_password="not-used-by-tests")
    ctx = LabContext(state_dir=tmp_path, stores={CONTEXT: store})
    if slapd is not None:
        ctx.ldap_url, ctx.ldap_bind_dn, ctx.ldap_bind_password = slapd.url, slapd.bind_dn, slapd.bind_password
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        app = build_app(store, name=f"kube-{CONTEXT}", exec_handler=dispatch_exec(ctx, CONTEXT))
        runner, url = loop.run_until_complete(start_kube_api(app))
        box.update(
            runner=runner,
            url=url,
            tasks=[loop.create_task(c.run(ctx)) for c in (reservation_controller, login_controller)],
        )
        started.set()
        loop.run_forever()
        for task in box["tasks"]:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*box["tasks"], return_exceptions=True))
        loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", [KubeContext(CONTEXT, box["url"], "admin-token")])
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TENANTFLOW_KUBECONFIG", str(kubeconfig))  # the worker's cluster registry
        yield Lab(store, box["url"], KubeTarget(context=CONTEXT), ctx)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
