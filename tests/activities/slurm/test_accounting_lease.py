"""Runs take turns on Slurm accounting through one coordination.k8s.io Lease (activities/common/kubelease.py).

slurmdbd stores two concurrent ``add account X`` as one with the last writer's values, so two onboardings that
want one team account could both believe they made it. These tests hold the Lease on the lab's Kubernetes
emulator (real HTTP) the way a second worker would, and run the Slurm steps against the real slurmdbd.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.activities.common.kubelease import SLURM_ACCOUNTING, Lease
from tenantflow.activities.slurm import steps as slurm
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input

NAMESPACE = "slurm-control"
PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{SLURM_ACCOUNTING}"


def lease(lab: SlurmLab, holder: str, wait_s: float = 1.0) -> Lease:
    return Lease(lab.target, NAMESPACE, SLURM_ACCOUNTING, holder=holder, wait_s=wait_s)


def stored(lab: SlurmLab) -> dict[str, object] | None:
    try:
        return kubeclient.request(lab.target, "GET", PATH)
    except ApplicationError as err:
        assert err.type == "NotFound", err
        return None


def test_a_held_lease_keeps_a_second_holder_out_until_it_is_released(lab: SlurmLab) -> None:
    first, second = lease(lab, "run-a/1"), lease(lab, "run-b/1")
    with first.held():
        spec = (stored(lab) or {})["spec"]
        assert isinstance(spec, dict) and spec["holderIdentity"] == "run-a/1" and spec["leaseDurationSeconds"] == 60
        with pytest.raises(ApplicationError) as refused:
            second.acquire()
        assert refused.value.type == TRANSIENT and "held by run-a/1" in refused.value.message
    assert stored(lab) is None, "released on leaving the block"
    with second.held():
        assert (stored(lab) or {}).get("spec", {})["holderIdentity"] == "run-b/1"


def test_a_lease_its_holder_stopped_renewing_is_taken_over_and_the_old_holder_cannot_delete_it(
    lab: SlurmLab,
) -> None:
    dead = lease(lab, "run-dead/1")
    held = dead.acquire()
    stale = datetime.now(UTC) - timedelta(seconds=120)
    held["spec"]["renewTime"] = stale.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    held = kubeclient.request(lab.target, "PUT", PATH, held)
    alive = lease(lab, "run-alive/1")
    taken = alive.acquire()
    assert taken["spec"]["holderIdentity"] == "run-alive/1" and taken["spec"]["leaseTransitions"] == 1
    dead.release(held)
    assert (stored(lab) or {}).get("spec", {})["holderIdentity"] == "run-alive/1", "a stale holder deleted it"
    alive.release(taken)
    assert stored(lab) is None


def test_the_same_holder_takes_its_own_lease_back_at_once(lab: SlurmLab) -> None:
    """A retry of a killed attempt carries the same workflow/activity id: it need not wait for the expiry."""
    first = lease(lab, "run-c/7").acquire()
    again = lease(lab, "run-c/7", wait_s=0.0).acquire()
    assert again["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    lease(lab, "run-c/7").release(again)


def test_slurm_accounts_waits_while_another_run_holds_the_lease(lab: SlurmLab) -> None:
    contract = make_contract(lab.target)
    other = lease(lab, "another-run/accounts")
    held = other.acquire()
    before = len(lab.sacctmgr_writes())
    done = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(lambda: (slurm.accounts(step_input(contract)), done.set())[0])
        time.sleep(3)  # room for a run that ignores the lease to write; with the lease it must not
        assert not done.is_set() and len(lab.sacctmgr_writes()) == before, "wrote while another run held the lease"
        other.release(held)
        result = running.result(timeout=120)
    try:
        assert {r.name for r in result.results} == {contract.slug, contract.team_account}
        assert stored(lab) is None, "the step released the lease"
    finally:
        slurm.undo(slurm.UndoInput(contract=contract, facts=result.facts, step="accounts", results=result.results))


def test_two_runs_wanting_one_team_account_at_once_give_it_to_exactly_one(lab: SlurmLab) -> None:
    """The race that made both lose (or both win): with turns, the second sees the first's account."""
    contracts = [make_contract(lab.target, team_account="team-raced") for _ in range(2)]
    start = threading.Barrier(2)

    def accounts(i: int) -> slurm.StepResult | ApplicationError:
        start.wait()
        try:
            return slurm.accounts(step_input(contracts[i]))
        except ApplicationError as err:
            return err

    with ThreadPoolExecutor(2) as pool:
        ends = list(pool.map(accounts, range(2)))
    won = [(c, e) for c, e in zip(contracts, ends, strict=True) if isinstance(e, slurm.StepResult)]
    lost = [e for e in ends if isinstance(e, ApplicationError)]
    try:
        assert len(won) == 1 and len(lost) == 1, ends
        assert lost[0].type == "Conflict" and "team-raced" in lost[0].message
        winner = won[0][0]
        assert lab.sh("sacctmgr", "show", "account", "team-raced", "format=organization", "-P", "-n").split() == [
            winner.slug
        ]
        assert lab.sh("sacctmgr", "show", "assoc", "where", "account=team-raced", "format=parentname", "-P", "-n")
    finally:
        for contract, end in won:
            assert isinstance(end, slurm.StepResult)
            slurm.undo(slurm.UndoInput(contract=contract, facts=end.facts, step="accounts", results=end.results))
