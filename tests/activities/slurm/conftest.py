"""Fixtures: real Slurm daemons (slurmd for gpu-01/gpu-02) behind the kube emulator's slurmctld pod.

``slurm`` (session) starts munged, MariaDB, slurmdbd, slurmctld and two slurmd via
:func:`lab.daemons.slurm.start_slurm`. ``lab`` (session) serves a seeded tenant
cluster with the kube emulator on a background loop and runs
:mod:`lab.controllers.slurm` (partitions operator + exec handler) against it, so
``exec deploy/slurmctld -- sacctmgr ...`` reaches the real daemons. ``contract``
gives each test its own tenant slug so tests share the daemons without sharing state.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tenantflow.activities.common import clusters
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers import slurm as slurm_controller
from tenantflow.lab.daemons import host_users
from tenantflow.lab.daemons.process import stop_all
from tenantflow.lab.daemons.slurm import SlurmHandle, start_slurm
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import seed_tenant_cluster
from tenantflow.lab.serve import dispatch_exec
from tenantflow.models.onboarding import Facts, StepInput
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract

CONTEXT = "tenant-cluster"
SLURMD_NODES = ["gpu-01", "gpu-02"]
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L t@lab"


def registered_kubeconfig(lab: SlurmLab) -> Path:
    """The kubeconfig the worker's cluster registry holds for the lab's cluster (its apiserver's address)."""
    kubeconfig = clusters.resolve(lab.target).kubeconfig
    assert kubeconfig is not None, lab.target
    return kubeconfig


@dataclass
class SlurmLab:
    store: Store
    target: KubeTarget
    ctx: LabContext
    slurm: SlurmHandle
    exec_handler: slurm_controller.SlurmExec
    known: dict[str, host_users.PasswdEntry] = field(default_factory=dict)

    def resolve(self, *users: str) -> None:
        """What nsscache does for the slurmctld pod: make ``users`` resolve there (uids from 3000, in order)."""
        for name in users:
            self.known.setdefault(
                name, host_users.PasswdEntry(name, 3000 + len(self.known), 3000, name, "/nonexistent")
            )
        host_users.publish(self.ctx.state_dir, list(self.known.values()), [])

    def sacctmgr_writes(self) -> list[list[str]]:
        return [a for a in self.exec_handler.history if a[0] == "sacctmgr" and "-i" in a]

    def sh(self, *argv: str) -> str:
        return self.slurm.run(*argv).stdout


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmHandle]:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("the real Slurm daemons need root and the Debian slurm packages")
    state_dir = tmp_path_factory.mktemp("slurm")
    handle = start_slurm(state_dir, slurmd_nodes=SLURMD_NODES)
    for parent in (state_dir, *state_dir.parents):  # smoke jobs run as user daemon and write below it
        if parent != Path("/"):
            parent.chmod(parent.stat().st_mode | 0o001)
    yield handle
    stop_all(state_dir)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, slurm: SlurmHandle) -> Iterator[SlurmLab]:
    tmp = tmp_path_factory.mktemp("lab")
    store = Store()
    seed_tenant_cluster(store, ldap_bind_password="unused")
    ctx = LabContext(
        state_dir=slurm.slurm_dir.parent,
        stores={CONTEXT: store},
        slurm_env={"SLURM_CONF": str(slurm.slurm_conf)},
        partitions_file=slurm.partitions_conf,
    )
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        app = build_app(store, name=f"kube-{CONTEXT}", exec_handler=dispatch_exec(ctx, CONTEXT))
        runner, url = loop.run_until_complete(start_kube_api(app))
        box.update(url=url, task=loop.create_task(slurm_controller.run(ctx)))
        started.set()
        loop.run_forever()
        box["task"].cancel()
        loop.run_until_complete(asyncio.gather(box["task"], return_exceptions=True))
        loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    kubeconfig = write_kubeconfig(tmp / "kubeconfig", [KubeContext(CONTEXT, box["url"], "admin-token")])
    deadline = time.monotonic() + 10
    while (handler := ctx.exec_handler_for(CONTEXT, "slurm-control", "slurmctld-0")) is None:
        assert time.monotonic() < deadline, "the slurm controller did not register its exec handler"
        time.sleep(0.05)
    assert isinstance(handler, slurm_controller.SlurmExec)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TENANTFLOW_KUBECONFIG", str(kubeconfig))  # the worker's cluster registry
        yield SlurmLab(store, KubeTarget(context=CONTEXT), ctx, slurm, handler)
    host_users.withdraw(ctx.state_dir)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def make_contract(target: KubeTarget, users: tuple[str, ...] = ("alice", "bob"), **slurm: Any) -> TenantContract:
    slug = f"tenant-t{secrets.token_hex(3)}"
    return TenantContract.model_validate(
        {
            "slug": slug,
            "display_name": f"Test {slug[-6:]}",
            "cluster": {"context": target.context},
            "capacity": {"sku": "h100-8x", "gpus": 16, "nodes": SLURMD_NODES},
            "users": [
                {"username": u, "email": f"{u}@example.org", "name": u.title(), "ssh_keys": [KEY]} for u in users
            ],
            "slurm": {"budget_gpu_minutes_total": 480_000, **slurm},
        }
    )


def step_input(contract: TenantContract, nodes: list[str] | None = None) -> StepInput:
    return StepInput(
        contract=contract, facts=Facts(nodes=nodes or list(SLURMD_NODES)), run_id=f"tenant/{contract.slug}"
    )


@pytest.fixture
def contract(lab: SlurmLab) -> TenantContract:
    made = make_contract(lab.target)
    lab.resolve(*made.usernames)
    return made


def ctl(lab: SlurmLab) -> SlurmCtl:
    return SlurmCtl.connect(lab.target)
