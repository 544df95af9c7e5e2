"""Every exec is bounded below the heartbeat timeout, and the Slurm loops over users heartbeat per object."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from tenantflow.activities import kubeclient, login, slurm
from tenantflow.activities.slurm_cli import SlurmCtl
from tenantflow.models.runbook import HEARTBEAT
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input


def test_every_exec_times_out_before_the_heartbeat_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    timeouts: list[int] = []

    def fake_exec(
        target: KubeTarget, namespace: str, pod: str, container: str, argv: list[str], timeout_s: int = 120
    ) -> kubeclient.ExecOutput:
        timeouts.append(timeout_s)
        return kubeclient.ExecOutput(stdout="", stderr="", exit_code=0)

    monkeypatch.setattr(kubeclient, "exec_in", fake_exec)
    target = KubeTarget(kubeconfig="/dev/null", context="x")
    ctl = SlurmCtl(target=target, pod="slurmctld-0")
    ctl.run(["scontrol", "ping"])
    ctl.on_slurmd("slurmd-gpu-01", ["getent", "passwd", "alice"])
    contract = make_contract(target)
    login.login_exec(contract, "login-x-0", ["ls", "/etc/ssh/authorized_keys.d/"])
    assert len(timeouts) == 3
    assert all(t < HEARTBEAT.total_seconds() for t in timeouts), timeouts


def test_the_users_step_heartbeats_for_every_user(lab: SlurmLab) -> None:
    users = tuple(f"hb{i}" for i in range(6))
    contract: TenantContract = make_contract(lab.target, users=users)
    lab.resolve(*users)
    inp = step_input(contract)
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.extend(details)
    results = [env.run(slurm.accounts, inp), env.run(slurm.qos, inp), env.run(slurm.users, inp)]
    try:
        assert {f"user {u}" for u in users} <= {b.get("slurm") for b in beats if isinstance(b, dict)}
    finally:
        for step, res in reversed(list(zip(("accounts", "qos", "users"), results, strict=True))):
            env.run(slurm.undo, slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))
    assert {f"user {u}" for u in users} <= {b.get("undo") for b in beats if isinstance(b, dict)}
