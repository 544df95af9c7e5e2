"""Answers that never arrive: a fresh small tenant is onboarded while committed writes lose their responses, and
while one write's connection hangs past the heartbeat timeout. Each run completes, makes every object once (its
ownership markers on it), touches nothing it did not make, and the tenant offboards (purge) to the world it found.

* Lost responses (the lab's ``drop_after_rate``: the handler runs, its write is committed, the connection closes
  without the answer) on every writing layer: the first write of the tenant cluster, Authentik and Weka and a
  seeded share of the next ones, and the first ``sacctmgr -i`` and ``scontrol`` writes execed into slurmctld. Each
  attempt after a lost answer must find the object its predecessor made and carry on; the run reports every
  planned creation as created (not "unchanged") although its create's answer never came.
* A hung connection: the namespace create waits 90 s (beyond the 60 s heartbeat timeout) without an answer. The
  client's read timeout ends the request (the lab never serves it: its client left), the step's next attempt
  creates the namespace.
"""

from __future__ import annotations

from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType

from tenantflow.activities.common.manifests import MANAGED_BY, MANAGER, RUN_ANNOTATION, TENANT_LABEL
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.plan import Action
from tenantflow.models.results import Outcome
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient, onboarding_id
from tests.chaos.conftest import Rig, small_tenant
from tests.chaos.kit import (
    STATS,
    Scenario,
    clear_faults,
    comparable,
    compare_worlds,
    foreign_touched,
    object_keys,
    set_faults,
    world,
)
from tests.integration.runs import offboard, onboard
from tests.integration.world import World, world_snapshot
from tests.labfixture import lab_services

WRITES = ["POST", "PUT", "PATCH", "DELETE"]
NOT_LOGIN = r"^(?!.*/login)"
"""Weka's login makes a session, not state: its lost answer proves nothing about writes."""
LOSSY_LAYERS = ("kube-tenant-cluster", "authentik", "weka")


def lossy_rules(seed_share: float = 0.25) -> list[dict[str, Any]]:
    """Exec writes into slurmctld first (an exec is a GET), then the layer's first write, then a share of the next."""
    lost = {"drop_after_rate": 1.0, "max_fires": 1}
    return [
        {"path": r"/exec$", "query": r"command=sacctmgr&command=-i&", **lost, "max_fires": 2},
        {"path": r"/exec$", "query": r"command=scontrol&command=(reconfigure|create|update)&", **lost},
        {"methods": WRITES, "path": NOT_LOGIN, **lost},
        {"methods": WRITES, "path": NOT_LOGIN, "drop_after_rate": seed_share, "max_fires": 2},
    ]


def lost_answers(lab: LabEndpoints) -> dict[str, list[str]]:
    """Per stand-in, the requests whose answer was lost (``METHOD path`` or ``exec <command>``)."""
    found: dict[str, list[str]] = {}
    for name, url in lab_services(lab).items():
        with httpx.Client(base_url=url, verify=False, timeout=10) as http:
            entries = http.get("/_lab/requests").json()["requests"]
        found[name] = [
            f"exec {e['query'].split('&container')[0]}" if e["path"].endswith("/exec") else f"{e['method']} {e['path']}"
            for e in entries
            if e["injected"] == "lost_response"
        ]
    return found


async def onboard_to_the_end(api: TenantflowClient, contract: TenantContract) -> OnboardingResult:
    result = await onboard(api, contract)
    assert result.status == "completed", result.message
    return result


def check_ours(result: OnboardingResult, contract: TenantContract, after: World) -> None:
    """Every planned creation is reported created, and carries this run's ownership marker."""
    assert result.plan is not None
    creates = {(p.kind, p.name, p.namespace) for p in result.plan.steps if p.action is Action.create}
    outcomes: dict[tuple[str, str, str | None], list[Outcome]] = {}
    for r in result.applied:  # a later step may report the same object (capacity.wait_reservation: unchanged)
        outcomes.setdefault((r.kind, r.name, r.namespace), []).append(r.outcome)
    misreported = {key: outcomes[key] for key in creates & outcomes.keys() if Outcome.created not in outcomes[key]}
    assert not misreported, f"planned creations not reported as created: {misreported}"
    run = onboarding_id(contract.slug)
    namespace = after["kube-tenant-cluster"][f"core/namespaces/-/{contract.namespace}"]["metadata"]
    assert namespace["labels"][MANAGED_BY] == MANAGER and namespace["labels"][TENANT_LABEL] == contract.slug
    assert namespace["annotations"][RUN_ANNOTATION] == run
    for name in (contract.slug, *contract.usernames):
        made = after["authentik"]["groups" if name == contract.slug else "users"][name]
        assert made["attributes"]["tenantflow.io/created-by"] == run, made


def count_duplicates(before: dict[str, Any], after: dict[str, Any], scenario: Scenario) -> None:
    """Objects present twice after the onboarding (lost are counted by the re-plan and the offboarding)."""
    keys = object_keys(after)
    twice = sorted({k for k in keys if keys.count(k) > max(1, object_keys(before).count(k))})
    scenario.duplicated += len(twice)
    STATS.duplicated += len(twice)
    assert not twice, twice


async def offboard_to_the_start(
    api: TenantflowClient, lab: LabEndpoints, contract: TenantContract, start: dict[str, Any], scenario: Scenario
) -> None:
    gone = await offboard(api, contract, purge=True)
    assert gone.status == "completed", gone.message
    compare_worlds(start, world(lab), view=comparable, scenario=scenario)


def ours(contract: TenantContract) -> tuple[str, ...]:
    return (contract.slug, contract.slurm.team_account, *contract.usernames)


async def test_onboarding_completes_when_committed_writes_lose_their_answers(rig: Rig, chaos_lab: LabEndpoints) -> None:
    scenario = STATS.scenario("write committed, response lost, on every writing layer")
    contract = small_tenant(chaos_lab, "tenant-lost", ("lost-a1", "lost-a2"))
    start, before = world(chaos_lab), world_snapshot(chaos_lab)
    clear_faults(chaos_lab)
    set_faults(chaos_lab, lossy_rules(), seed=13)
    try:
        result = await onboard_to_the_end(rig.api, contract)
        lost = lost_answers(chaos_lab)
    finally:
        clear_faults(chaos_lab)
    for layer in LOSSY_LAYERS:
        assert [a for a in lost[layer] if not a.startswith("exec")], f"no write of {layer} lost its answer: {lost}"
    assert any("sacctmgr" in a for a in lost["kube-tenant-cluster"]), lost
    after = world_snapshot(chaos_lab)
    touched = foreign_touched(before, after, ours(contract), scenario=scenario)
    assert not touched, "\n".join(touched)
    check_ours(result, contract, after)
    count_duplicates(start, world(chaos_lab), scenario)
    per_layer = ", ".join(f"{layer} {len(answers)}" for layer, answers in lost.items() if answers)
    STATS.notes.append(f"lost responses (committed writes unanswered): {per_layer}; the run completed")
    await offboard_to_the_start(rig.api, chaos_lab, contract, start, scenario)
    STATS.runs_completed += 1
    scenario.outcome = result.status


async def attempts_of(api: TenantflowClient, workflow_id: str, activity: str) -> int:
    """How many attempts the run's history started for ``activity``."""
    scheduled: set[int] = set()
    attempts = 0
    async for event in api.client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name == activity:
                scheduled.add(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in scheduled:
                attempts = max(attempts, started.attempt)
    return attempts


async def test_onboarding_completes_past_a_connection_hung_beyond_the_heartbeat_timeout(
    rig: Rig, chaos_lab: LabEndpoints
) -> None:
    scenario = STATS.scenario("a write's connection hung past the heartbeat timeout")
    contract = small_tenant(chaos_lab, "tenant-hang", ("hang-a1", "hang-a2"))
    start, before = world(chaos_lab), world_snapshot(chaos_lab)
    clear_faults(chaos_lab)
    hang = {"methods": ["POST"], "path": r"^/api/v1/namespaces$", "latency_ms": 90_000, "max_fires": 1}
    set_faults(chaos_lab, [hang], services=["kube-tenant-cluster"])
    try:
        result = await onboard_to_the_end(rig.api, contract)
        with httpx.Client(base_url=chaos_lab.kube_urls["tenant-cluster"], verify=False, timeout=10) as http:
            journal = http.get("/_lab/requests").json()
    finally:
        clear_faults(chaos_lab)
    hung = [e for e in journal["requests"] if e["injected"] == "abandoned"]
    assert [(e["method"], e["path"]) for e in hung] == [("POST", "/api/v1/namespaces")], journal["requests"]
    assert await attempts_of(rig.api, onboarding_id(contract.slug), "kube.namespace") == 2
    after = world_snapshot(chaos_lab)
    touched = foreign_touched(before, after, ours(contract), scenario=scenario)
    assert not touched, "\n".join(touched)
    check_ours(result, contract, after)
    count_duplicates(start, world(chaos_lab), scenario)
    STATS.notes.append("hung connection: the namespace create gave up after its read timeout; attempt 2 made it")
    await offboard_to_the_start(rig.api, chaos_lab, contract, start, scenario)
    STATS.runs_completed += 1
    scenario.outcome = result.status
