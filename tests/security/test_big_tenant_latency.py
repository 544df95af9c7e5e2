"""Issue 13 (bounded I/O): a 300-user tenant onboards through Temporal against a lab whose every HTTP stand-in
(the kube apiservers, their pod exec route included, Authentik and Weka) answers each request 300 ms late, and
every activity finishes on its first attempt: no per-user loop outlives a heartbeat or start-to-close timeout.
It runs for about three minutes (300 users at the default fan-out of 8 cost about 11 s per pass over the users per
layer at this latency); the test timeout is raised for it alone, no activity timeout is.

The attempts come from the run's history (``ActivityTaskStarted.attempt``, read by :mod:`bench.history` as the
bench's users curve does). The latency is lifted before the tenant is offboarded (purged), so the session lab
is left as it was found."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.bench.history import activity_spans
from tenantflow.bench.users import crowd
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.run_ids import onboarding_id
from tenantflow.starter.contracts import load_tenant
from tests.chaos.kit import set_faults
from tests.integration.runs import offboard, onboard
from tests.labfixture import lab_services, lab_worker, reset_journals
from tests.workflows.contract import EXAMPLES

USERS = 300
LATENCY_MS = 300


def injected_latency(lab: LabEndpoints) -> dict[str, int]:
    """Requests each stand-in delayed since the journals were reset (an onboarding talks to the tenant's cluster,
    Authentik and Weka; the hub and worker clusters only serve enrollment)."""
    counts = {}
    for name, url in lab_services(lab).items():
        with httpx.Client(base_url=url, verify=False, timeout=10) as http:
            counts[name] = http.get("/_lab/requests").json()["injected"].get("latency", 0)
    return counts


def exec_requests(lab: LabEndpoints) -> int:
    """Pod exec requests the kube stand-ins served since the journals were reset (all of them delayed)."""
    total = 0
    for url in lab.kube_urls.values():
        with httpx.Client(base_url=url, verify=False, timeout=10) as http:
            entries = http.get("/_lab/requests").json()["requests"]
        total += sum(1 for e in entries if e["path"].endswith("/exec"))
    return total


@pytest.fixture
def slow_lab(lab: LabEndpoints) -> Iterator[LabEndpoints]:
    """The session lab with every request of every HTTP stand-in delayed; the delay lifted afterwards."""
    reset_journals(lab)
    set_faults(lab, [{"latency_ms": LATENCY_MS}])
    try:
        yield lab
    finally:
        set_faults(lab, [])
        reset_journals(lab)


@pytest.mark.timeout(900)
async def test_a_300_user_tenant_under_300_ms_latency_finishes_every_activity_on_attempt_1(
    dev_env: WorkflowEnvironment, slow_lab: LabEndpoints
) -> None:
    contract = crowd(load_tenant(EXAMPLES / "tenant-foo.yaml"), "slow300", USERS)
    assert len(set(contract.usernames)) == USERS
    async with lab_worker(dev_env.client, slow_lab) as api:
        try:
            result = await onboard(api, contract)
            assert result.status == "completed", result.message
            slowed = injected_latency(slow_lab)
            assert all(slowed[name] for name in ("kube-tenant-cluster", "authentik", "weka")), slowed
            assert exec_requests(slow_lab) > 0
            set_faults(slow_lab, [])
            history = await api.handle(onboarding_id(contract.slug)).fetch_history()
            spans = activity_spans(history.events)
            assert {"identity.users", "slurm.users", "storage.quotas", "login.verify"} <= {s.name for s in spans}
            assert [(s.name, s.attempt) for s in spans if s.attempt != 1] == []
        finally:
            set_faults(slow_lab, [])
            await offboard(api, contract, purge=True)
