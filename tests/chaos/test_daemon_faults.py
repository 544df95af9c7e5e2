"""Faults below the HTTP stand-ins: the real slapd, slurmctld and slurmdbd, the Temporal dev server and the worker die
mid-step; runs end as undisturbed ones do, and a rollback outlives a slurmdbd outage.

* A fresh onboarding of tenant-foo (offboarded with purge first) meets four faults, each in a different step and
  each acted on when Temporal shows the attempt it hits (pending activities, :mod:`tests.chaos.daemons`):
  slapd SIGKILLed while ``identity.users`` writes (so ``identity.verify_ldap`` finds the outpost unreachable) and
  restarted once verify has failed on it; the worker SIGKILLed inside ``kube.quota`` (the namespace just created;
  the rig's worker bounds heartbeat timeouts to 30 s, so the step is retried after 30 s rather than a minute);
  slurmctld SIGKILLed inside ``slurm.partition`` and restarted once the step has failed on it; the dev server
  SIGKILLed while ``login.release`` runs. The run ends as the session's undisturbed onboarding did and the world
  equals the one it left (nothing lost, nothing duplicated). Latency faults hold each step open for its fault.
* A fresh small tenant fails non-retryably at ``storage.filesystems`` (Weka answers 403) after its Slurm layer was
  written; slurmdbd is stopped before the rollback reaches ``slurm.undo`` and stays down at least 60 s, and the
  worker is SIGKILLed while the first ``slurm.undo`` attempt is in flight. The rollback either finishes (world
  diff: nothing of the tenant left) or waits at ``retry_rollback`` listing exactly the Slurm objects still there,
  and answering it after slurmdbd is back finishes the rollback.

Foreign objects touched: for the onboarding, leaves of the undisturbed run's world that this run changed or removed;
for the rollback, leaves of the world before it that changed (a finished rollback leaves the world as it found it).
A daemon a test took down is started again on the way out if the test fails first.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.rollback import Leftover
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import DevServer
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, outcome, small_tenant, tenant
from tests.chaos.daemons import (
    failed_unavailable,
    kill_server,
    named,
    outage,
    pending,
    slapd_ready,
    slurm_ready,
    started,
    wait_pending,
)
from tests.chaos.kit import (
    STATS,
    Scenario,
    clear_faults,
    comparable,
    compare_worlds,
    foreign_touched,
    running,
    set_faults,
    slow_login_release,
    wait_until,
    world,
)
from tests.integration.runs import offboard
from tests.integration.world import world_snapshot

OUTAGE_S = 60.0
"""How long slurmdbd stays stopped during the rollback (issue 13's acceptance)."""


def settle(lines: list[Scenario], source: Scenario, outcome: str) -> None:
    """Every line of one run carries the run's counts and outcome."""
    for line in lines:
        line.lost, line.duplicated, line.foreign_touched = source.lost, source.duplicated, source.foreign_touched
        line.outcome = outcome


@pytest.mark.heartbeat_bound(30)
async def test_fresh_onboarding_outlives_slapd_slurmctld_worker_and_server_kills(
    rig: Rig, chaos_server: DevServer, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    lines = [
        STATS.scenario("slapd SIGKILL in identity.users, verify_ldap meets it"),
        STATS.scenario("worker SIGKILL in kube.quota of a fresh tenant"),
        STATS.scenario("slurmctld SIGKILL in slurm.partition, restarted"),
        STATS.scenario("dev server SIGKILL with login.release in flight"),
    ]
    contract, api = tenant(chaos_lab), rig.api
    gone = await offboard(api, contract, purge=True)
    assert gone.status == "completed", gone.message
    handle = await api.start_onboarding(contract)
    plan = await api.wait_for_plan(handle.id)
    set_faults(chaos_lab, [{"path": "/core/users/", "latency_ms": 1500}], services=["authentik"])
    slow_kube = [
        {"path": "/resourcequotas", "latency_ms": 3000},
        {"path": "/configmaps/slurm-partitions", "latency_ms": 1500},
        slow_login_release(2500),
    ]
    set_faults(chaos_lab, slow_kube, services=["kube-tenant-cluster"])
    try:
        await reviewer(api).approve(handle.id, plan.plan_hash or "")

        await wait_pending(handle, named("identity.users"), started, "identity.users running")
        with outage(chaos_lab, "slapd", kill=True, ready=slapd_ready(chaos_lab)) as slapd:
            await wait_pending(handle, named("identity.verify_ldap"), failed_unavailable, "verify_ldap failing")
            slapd.start()

        await wait_pending(handle, named("kube.quota"), started, "kube.quota running")
        rig.worker.kill()
        rig.worker.start()

        await wait_pending(handle, named("slurm.partition"), started, "slurm.partition running")
        with outage(chaos_lab, "slurmctld", kill=True, ready=slurm_ready(chaos_lab, "scontrol", "ping")) as ctld:
            await wait_pending(handle, named("slurm.partition"), failed_unavailable, "slurm.partition failing")
            ctld.start()

        await wait_pending(handle, named("login.release"), started, "login.release running")
        kill_server(chaos_server)
    finally:
        clear_faults(chaos_lab)
    end = await outcome(api, handle.id)
    assert end == baseline.end
    after = world(chaos_lab)
    touched = foreign_touched(comparable(baseline.after), comparable(after), (), scenario=lines[0])
    compare_worlds(baseline.after, after, view=comparable, scenario=lines[0])
    assert not touched, "\n".join(touched)
    STATS.runs_completed += 1
    settle(lines, lines[0], end[0])


async def test_rollback_outlives_a_slurmdbd_outage_and_a_worker_kill(
    rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    lines = [
        STATS.scenario("slurmdbd stopped 60 s during a rollback"),
        STATS.scenario("worker SIGKILL during a rollback (slurm.undo)"),
    ]
    assert baseline.end[0] == "completed"
    contract, api = small_tenant(chaos_lab, "tenant-undo", ("undo-a1", "undo-a2")), rig.api
    before, before_snapshot = world(chaos_lab), world_snapshot(chaos_lab)
    refused = {"path": "/fileSystems$", "methods": ["POST"], "latency_ms": 1000, "error_rate": 1.0}
    set_faults(chaos_lab, [{**refused, "error_status": 403}], services=["weka"])
    handle = await api.start_onboarding(contract)
    plan = await api.wait_for_plan(handle.id)
    await reviewer(api).approve(handle.id, plan.plan_hash or "")
    dbd_ready = slurm_ready(chaos_lab, "sacctmgr", "-n", "show", "cluster")
    try:
        await wait_until(api, handle, running("storage.filesystems"), what="storage.filesystems running")
        set_faults(chaos_lab, [{"path": "/exec$", "latency_ms": 5000}], services=["kube-tenant-cluster"])
        with outage(chaos_lab, "slurmdbd", kill=False, ready=dbd_ready) as slurmdbd:
            stopped_at = asyncio.get_running_loop().time()
            await wait_pending(handle, named("slurm.undo"), started, "slurm.undo running")
            rig.worker.kill()
            set_faults(chaos_lab, [], services=["kube-tenant-cluster"])
            rig.worker.start()
            await outage_met(api, handle)
            await asyncio.sleep(max(0.0, OUTAGE_S - (asyncio.get_running_loop().time() - stopped_at)))
            slurmdbd.start()
    finally:
        clear_faults(chaos_lab)
    status = await wait_until(
        api, handle, lambda s: s.stage in ("rolled-back", "gate:retry_rollback"), what="the rollback's end"
    )
    if status.stage == "gate:retry_rollback":
        assert_left_exactly(before, world(chaos_lab), status.leftovers)
        await reviewer(api).answer_gate(handle.id, "retry_rollback")
        STATS.notes.append(f"slurmdbd outage: the rollback waited at retry_rollback for {len(status.leftovers)}")
    end = await outcome(api, handle.id)
    final = await api.status(handle.id)
    assert end[0] == "failed" and "403" in end[1], end
    assert final.stage == "rolled-back" and not final.leftovers, (final.stage, final.leftovers)
    compare_worlds(before, world(chaos_lab), view=comparable, scenario=lines[0])
    touched = foreign_touched(before_snapshot, world_snapshot(chaos_lab), (), scenario=lines[0])
    assert not touched, "\n".join(touched)
    STATS.runs_failed_as_expected += 1
    settle(lines, lines[0], "rolled back" if status.stage == "rolled-back" else "retry_rollback, rolled back")


def assert_left_exactly(before: dict[str, Any], now: dict[str, Any], leftovers: list[Leftover]) -> None:
    """At the gate, every other layer is restored and the leftovers name exactly the Slurm lines still there."""
    assert leftovers and {item.layer for item in leftovers} == {"slurm"}, leftovers
    assert comparable(now["http"]) == comparable(before["http"])
    extra = [line for kind, lines in now["slurm"].items() for line in lines if line not in before["slurm"][kind]]
    names = {item.name for item in leftovers}
    assert all(any(name in line for name in names) for line in extra), (extra, leftovers)
    assert all(any(name in line for line in extra) for name in names), (extra, leftovers)


async def outage_met(api: TenantflowClient, handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until the rollback has met the outage: an undo attempt after the crash failed on slurmdbd (retried),
    or the run stopped at ``retry_rollback`` with what the undo left."""

    async def met() -> bool:
        info = await pending(handle, named("slurm.undo"))
        if info is not None and failed_unavailable(info):
            return True
        return (await api.status(handle.id)).stage == "gate:retry_rollback"

    deadline = asyncio.get_running_loop().time() + 150
    while not await met():
        assert asyncio.get_running_loop().time() < deadline, "the rollback never met the slurmdbd outage"
        await asyncio.sleep(0.1)
