"""A failure at any apply step, or a cancel, leaves every layer of the lab exactly as before the run.

One lab for every case, nothing reset between cases except by the rollback itself: each case
snapshots the whole world, onboards its own tenant, approves, makes one step fail (a worker
interceptor, before the step's body or after it, or a lab fault on a route used mid-step),
waits for the failed run and compares the world with the snapshot. The one allowed difference
is the runbook's: Authentik users the run created stay, deactivated and in no group.

Every step fails after its body (its writes made, its answer lost): its undo finds the plan's objects for it and
removes them, and every step before it is undone from what it reported. A step that fails before its body goes
on the saga the same way, with the plan's objects absent: one case has every step report success without
running, the last one failing, so that each step's undo meets its objects absent (and must leave the world
alone); one more fails a step before its body in the middle of a real run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import APPLY
from tenantflow.starter.client import TenantflowClient
from tests.integration.rollback_rig import (
    INJECTED,
    Injection,
    assert_world_restored,
    failing_worker,
    failure_of,
    start_approved,
    tenant,
)
from tests.integration.world import world_snapshot

STEPS = [s.name for s in APPLY]
FAULTS = {
    # step: (service, method, path regex) of a write the step makes after an earlier write of its own
    "kube.quota": ("kube-tenant-cluster", "POST", r"/limitranges$"),
    "storage.filesystems": ("weka", "POST", r"/fileSystems$"),
    "storage.csi": ("kube-tenant-cluster", "POST", r"/storageclasses$"),
    "login.release": ("kube-tenant-cluster", "POST", r"/helmreleases$"),
}


@pytest.fixture(scope="module")
def injection() -> Injection:
    return Injection()


@pytest_asyncio.fixture(scope="module")
async def api(dev_env: WorkflowEnvironment, lab: LabEndpoints, injection: Injection) -> AsyncIterator[TenantflowClient]:
    async with failing_worker(dev_env.client, lab, injection) as client:
        yield client


@pytest.fixture
def inject(injection: Injection) -> Iterator[Injection]:
    yield injection
    injection.reset()


def _tag(step: str, when: str) -> str:
    return f"rb{STEPS.index(step)}{when[0]}"


async def _fails_and_restores(api: TenantflowClient, lab: LabEndpoints, tag: str) -> BaseException:
    contract = tenant(lab, tag)
    before = world_snapshot(lab)
    handle = await start_approved(api, contract)
    cause = await failure_of(handle)
    assert_world_restored(before, world_snapshot(lab), contract.usernames)
    assert (await api.status(handle.id)).stage == "rolled-back"
    return cause


@pytest.mark.parametrize(("step", "when"), [(step, "after") for step in STEPS] + [("storage.filesystems", "before")])
async def test_failed_step_rolls_back_every_layer(
    api: TenantflowClient, lab: LabEndpoints, inject: Injection, step: str, when: str
) -> None:
    inject.activity, inject.when = step, when
    cause = await _fails_and_restores(api, lab, _tag(step, when))
    assert inject.fired == 1
    assert isinstance(cause, Exception) and INJECTED in str(cause.__cause__ or cause), repr(cause)


UNDONE_WHEN_NOTHING_RAN = [
    # the runbook's rollback order (login, Slurm, Kubernetes, capacity, Weka, Authentik), later steps first in a
    # layer: each step the plan creates something for, the checks (wait_reservation, verify_ldap, verify) not
    "login.undo release",
    "slurm.undo partition",
    "slurm.undo users",
    "slurm.undo qos",
    "slurm.undo accounts",
    "kube.undo rbac",
    "kube.undo network_policy",
    "kube.undo binding",
    "kube.undo quota",
    "kube.undo namespace",
    "capacity.undo reservation",
    "storage.undo csi",
    "storage.undo quotas",
    "storage.undo filesystems",
    "identity.undo users",
    "identity.undo group",
]


async def test_every_undo_leaves_the_world_alone_when_its_step_wrote_nothing(
    api: TenantflowClient, lab: LabEndpoints, inject: Injection
) -> None:
    inject.skip_bodies = True
    inject.activity, inject.when = STEPS[-1], "before"
    cause = await _fails_and_restores(api, lab, "rbnone")
    assert inject.fired == 1
    assert isinstance(cause, Exception) and INJECTED in str(cause.__cause__ or cause), repr(cause)
    assert inject.undone == UNDONE_WHEN_NOTHING_RAN
    users = world_snapshot(lab)["authentik"]["users"]
    assert not [name for name in tenant(lab, "rbnone").usernames if name in users], "a step's body ran"


def _set_fault(lab: LabEndpoints, service: str, rules: list[dict[str, Any]]) -> None:
    urls = {f"kube-{c}": u for c, u in lab.kube_urls.items()} | {"weka": lab.weka_url, "authentik": lab.authentik_url}
    with httpx.Client(base_url=urls[service], verify=False, timeout=10) as http:
        http.put("/_lab/faults", json={"rules": rules}).raise_for_status()


@pytest.mark.parametrize("step", sorted(FAULTS))
async def test_lab_fault_mid_step_rolls_back_every_layer(api: TenantflowClient, lab: LabEndpoints, step: str) -> None:
    service, method, path = FAULTS[step]
    contract = tenant(lab, f"rbf{STEPS.index(step)}")
    before = world_snapshot(lab)
    _set_fault(lab, service, [{"path": path, "methods": [method], "error_rate": 1.0, "error_status": 422}])
    try:
        handle = await start_approved(api, contract)
        cause = await failure_of(handle)
    finally:
        _set_fault(lab, service, [])
    assert_world_restored(before, world_snapshot(lab), contract.usernames)
    assert isinstance(cause.__cause__, ApplicationError) and "422" in str(cause.__cause__), repr(cause)
    steps = (await api.status(handle.id)).steps
    assert [s.name for s in steps if s.state == "failed"] == [step]


async def test_cancel_while_applying_rolls_back_every_layer(api: TenantflowClient, lab: LabEndpoints) -> None:
    contract = tenant(lab, "rbcancel")
    before = world_snapshot(lab)
    handle = await start_approved(api, contract)
    for _ in range(600):
        stage = (await api.status(handle.id)).stage
        if stage.startswith("apply:") and STEPS.index(stage.removeprefix("apply:")) >= STEPS.index("slurm.qos"):
            break
        await asyncio.sleep(0.1)
    await handle.cancel()
    cause = await failure_of(handle)
    assert isinstance(cause, CancelledError), repr(cause)
    assert_world_restored(before, world_snapshot(lab), contract.usernames)
    assert (await api.status(handle.id)).stage == "rolled-back"
