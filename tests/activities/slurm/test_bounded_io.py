"""Every exec is bounded below the heartbeat timeout, a cancel during an exec stays a cancel, and the Slurm loops
over users heartbeat per object."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
import yaml
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.settings import ServiceSettings, settings
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.slurm import steps as slurm
from tenantflow.models.results import EnsureResult
from tenantflow.models.step import HEARTBEAT
from tenantflow.models.tenant import TenantContract
from tests.activities.slurm.conftest import SlurmLab, make_contract, registered_kubeconfig, step_input


def test_the_exec_timeout_stays_below_the_heartbeat_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENANTFLOW_EXEC_TIMEOUT", str(int(HEARTBEAT.total_seconds())))
    with pytest.raises(ValidationError, match="TENANTFLOW_EXEC_TIMEOUT"):
        ServiceSettings()


def test_a_hung_exec_is_cut_at_the_exec_timeout(lab: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> None:
    """``squeue --iterate`` never ends: the slurmctld and slurmd execs are cut at the exec timeout instead of
    outliving the activity's heartbeat timeout, and the attempt fails retryably (the outcome is unknown, so the
    step reads back on its next attempt), never as a failed command with a made-up exit code."""
    monkeypatch.setenv("TENANTFLOW_EXEC_TIMEOUT", "2")
    settings.cache_clear()
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    cut: list[ApplicationError] = []
    try:
        for run in (
            lambda: ctl.run(["squeue", "--iterate=1"], check=False),
            lambda: ctl.on_slurmd("slurmd-gpu-01", ["squeue", "--iterate=1"]),
        ):
            with pytest.raises(ApplicationError) as raised:
                run()
            cut.append(raised.value)
    finally:
        settings.cache_clear()
    assert [(e.type, e.non_retryable) for e in cut] == [("Unavailable", False)] * 2, cut
    assert all("no exit status within 2 s" in e.message and "`squeue --iterate=1`" in e.message for e in cut), cut


def test_a_cancel_during_the_exec_handshake_stays_a_cancel(lab: SlurmLab) -> None:
    """kubernetes' websocket_call turns any exception into ApiException(status=0): the activity's cancel, raised in
    its thread while the apiserver is slow to answer the exec, must reach Temporal as a cancel, not as a retryable
    "kubernetes answered HTTP 0" (which made a cancelled onboarding end failed instead of cancelled)."""
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    ctl.run(["scontrol", "ping"])  # the client's modules are loaded: the cancel lands in the handshake
    server = yaml.safe_load(registered_kubeconfig(lab).read_text())["clusters"][0]["cluster"]["server"]
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


def test_the_users_step_heartbeats_its_progress_and_undo_every_user(lab: SlurmLab) -> None:
    users = tuple(f"hb{i}" for i in range(6))
    contract: TenantContract = make_contract(lab.target, users=users)
    lab.resolve(*users)
    inp = step_input(contract)
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.extend(details)
    results = [env.run(slurm.accounts, inp), env.run(slurm.qos, inp), env.run(slurm.users, inp)]
    try:
        assert {"slurm": {"users": len(users), "outcome": "created"}} in beats, beats
    finally:
        undone: list[list[EnsureResult]] = [
            env.run(slurm.undo, slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))
            for step, res in reversed(list(zip(("accounts", "qos", "users"), results, strict=True)))
        ]
    batches = [b["undo"] for b in beats if isinstance(b, dict) and isinstance(b.get("undo"), dict)]
    assert [(b["users"], b["of"]) for b in batches] == [(0, len(users))], "one batch heartbeat for the 6 users"
    assert {r.name for r in undone[0] if r.kind == "user" and r.outcome == "deleted"} == set(users)
