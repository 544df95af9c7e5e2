"""Every exec is bounded below the heartbeat timeout, a cancel during an exec stays a cancel, and the Slurm loops
over users heartbeat per object."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from temporalio.exceptions import CancelledError
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


def test_a_cancel_during_the_exec_handshake_stays_a_cancel(lab: SlurmLab) -> None:
    """kubernetes' websocket_call turns any exception into ApiException(status=0): the activity's cancel, raised in
    its thread while the apiserver is slow to answer the exec, must reach Temporal as a cancel, not as a retryable
    "kubernetes answered HTTP 0" (which made a cancelled onboarding end failed instead of cancelled)."""
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    ctl.run(["scontrol", "ping"])  # the client's modules are loaded: the cancel lands in the handshake
    server = yaml.safe_load(Path(lab.target.kubeconfig).read_text())["clusters"][0]["cluster"]["server"]
    with httpx.Client(base_url=server, verify=False, timeout=10) as http:
        http.put("/_lab/faults", json={"rules": [{"path": r"/exec$", "latency_ms": 1500}]}).raise_for_status()
        env = ActivityEnvironment()
        timer = threading.Timer(0.3, env.cancel)
        timer.start()
        try:
            with pytest.raises(CancelledError):
                env.run(ctl.run, ["scontrol", "ping"])
        finally:
            timer.join()
            http.delete("/_lab/faults").raise_for_status()


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
