"""Dependency faults: every HTTP stand-in fails, stalls and drops a share of its requests; runs still end well.

* Under a fault storm (30% of reads answered 5xx, 10% of writes 429 with ``Retry-After``, dropped connections,
  latency) on the tenant cluster, Authentik and Weka, tenant-foo is onboarded again from scratch (offboarded with
  purge first) and the world equals the session's undisturbed onboarding of it.
* A 429 with ``Retry-After: 2`` delays the next try of that request by at least 2 s, read or write (both are
  retried in place while the wait fits, a throttled write never having run; then by the activity's retry policy
  with ``next_retry_delay``): measured on the stand-ins' journal timestamps.
* A 403 and a 422 fail the run fast with the API's message: the journal shows one request, no retry.
"""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.starter.client import TenantflowClient
from tests.chaos.conftest import Baseline, Rig, outcome, tenant
from tests.chaos.kit import STATS, clear_faults, comparable, compare_worlds, faulted_requests, set_faults, world
from tests.integration.runs import offboard, onboard
from tests.labfixture import journal_writes, reset_journals

SERVICES = {"kube-tenant-cluster": 503, "authentik": 502, "weka": 500}
"""Each stand-in answers its reads' injected errors with its own 5xx."""


def storm(read_status: int) -> list[dict[str, Any]]:
    """Fault rules of one stand-in: exec upgrades refused at a lower rate (opened again in place), reads 30%
    5xx, writes 10% 429 with Retry-After: 1; every request a little slower and some connections dropped."""
    return [
        {"path": r"/exec$", "error_rate": 0.05, "error_status": read_status, "latency_ms": 20},
        {"methods": ["GET"], "error_rate": 0.3, "error_status": read_status, "drop_rate": 0.05, "latency_ms": 20},
        {"error_rate": 0.1, "error_status": 429, "retry_after_s": 1, "drop_rate": 0.03, "latency_ms": 20},
    ]


async def test_onboarding_completes_under_a_fault_storm(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    scenario = STATS.scenario("fault storm (errors, drops, 429, latency) on every HTTP layer")
    contract = tenant(chaos_lab)
    gone = await offboard(rig.api, contract, purge=True)
    assert gone.status == "completed", gone.message
    for seed, (service, status) in enumerate(SERVICES.items()):
        set_faults(chaos_lab, storm(status), seed=seed, services=[service])
    try:
        result = await onboard(rig.api, contract)
    finally:
        fired = clear_faults(chaos_lab)
    assert (result.status, result.message) == baseline.end
    assert fired >= 30, f"only {fired} faults fired"
    STATS.notes.append(f"fault storm: {fired} errors and drops injected into one onboarding, which completed")
    compare_worlds(baseline.after, world(chaos_lab), view=comparable, scenario=scenario)
    STATS.runs_completed += 1
    scenario.outcome = result.status


async def gaps_while_faulted(
    api: TenantflowClient, lab: LabEndpoints, service: str, method: str, path: str, hits: int
) -> list[float]:
    """Wait for ``hits`` injected answers on one route, stop its faults, return the gaps between them."""
    deadline = asyncio.get_running_loop().time() + 60
    while len(entries := faulted_requests(lab, service, method, path)) < hits:
        assert asyncio.get_running_loop().time() < deadline, f"{method} {service} {path}: {entries}"
        await asyncio.sleep(0.2)
    set_faults(lab, [], services=[service])
    times = [e["at"] for e in entries]
    return [later - earlier for earlier, later in pairwise(times)]


async def test_retry_after_delays_the_next_try(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    """Reads (kube nodes) and a write (Weka login) under 429: each try waits the Retry-After."""
    scenario = STATS.scenario("429 with Retry-After on a read and a write")
    assert baseline.end[0] == "completed"
    throttled = {"error_rate": 1.0, "error_status": 429, "retry_after_s": 2}
    set_faults(
        chaos_lab, [{"path": "^/api/v1/nodes$", "methods": ["GET"], **throttled}], services=["kube-tenant-cluster"]
    )
    set_faults(chaos_lab, [{"path": "/login$", "methods": ["POST"], **throttled}], services=["weka"])
    handle = await rig.api.start_onboarding(tenant(chaos_lab))
    try:
        read_gaps = await gaps_while_faulted(rig.api, chaos_lab, "kube-tenant-cluster", "GET", "^/api/v1/nodes$", 6)
        write_gaps = await gaps_while_faulted(rig.api, chaos_lab, "weka", "POST", "/login$", 3)
        status = await rig.api.wait_for_plan(handle.id, timeout_s=60)
        assert status.plan_hash
        assert sum(journal_writes(chaos_lab).values()) == 0
    finally:
        await handle.terminate()
        clear_faults(chaos_lab)
    assert min(read_gaps) >= 2.0, read_gaps
    assert min(write_gaps) >= 2.0, write_gaps
    STATS.notes.append(
        f"Retry-After 2 s: read retries {max(read_gaps):.1f}-{min(read_gaps):.1f} s apart, "
        f"write retries {min(write_gaps):.1f}-{max(write_gaps):.1f} s apart"
    )
    STATS.runs_completed += 1
    scenario.outcome = "waited Retry-After"


async def test_forbidden_and_invalid_fail_fast_with_the_api_message(rig: Rig, chaos_lab: LabEndpoints) -> None:
    for service, method, path, status in (("authentik", "GET", "/core/", 403), ("weka", "POST", "/login$", 422)):
        scenario = STATS.scenario(f"{service} {method} answers {status}")
        reset_journals(chaos_lab)
        set_faults(
            chaos_lab,
            [{"path": path, "methods": [method], "error_rate": 1.0, "error_status": status}],
            services=[service],
        )
        started = asyncio.get_running_loop().time()
        handle = await rig.api.start_onboarding(tenant(chaos_lab))
        try:
            end = await asyncio.wait_for(outcome(rig.api, handle.id), 60)
            took = asyncio.get_running_loop().time() - started
            hits = faulted_requests(chaos_lab, service, method, path)
        finally:
            clear_faults(chaos_lab)
        assert end[0] == "failed", end
        assert f"{service} answered HTTP {status}" in end[1] and "lab fault injected" in end[1], end
        assert len(hits) == 1, f"{service} {status} was retried: {hits}"
        assert took < 30, f"failing on {status} took {took:.0f}s"
        STATS.runs_failed_as_expected += 1
        scenario.outcome = "failed fast"
