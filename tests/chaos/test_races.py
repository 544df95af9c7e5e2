"""Two tenants racing for what only one can have: auto-chosen nodes, one username, one Slurm team account.

Both runs are started and approved together on the chaos rig, so they reach the contested object at about the
same moment. The contract of each race: the loser fails (or its re-plan at apply reopens the gate) with a message
naming what it lost, its rollback touches nothing of the winner, and once the winner is offboarded with purge the
world is the one before (nothing lost, duplicated or foreign touched; deactivated user records are kept by design).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, small_tenant
from tests.chaos.kit import STATS, Scenario
from tests.chaos.racing import Before, free_nodes, mentioning, race, settle, tally
from tests.integration.runs import offboard
from tests.integration.world import World, diff, world_snapshot


def reserved_nodes(snapshot: World, contract: TenantContract) -> list[str]:
    """The nodes the tenant's Reservation holds, as the reservation operator granted them."""
    found = [
        obj
        for key, obj in snapshot["kube-tenant-cluster"].items()
        if "/reservations/" in key and key.endswith(f"/{contract.reservation_name}")
    ]
    return sorted(node for obj in found for node in (obj.get("spec") or {}).get("reservedNodes") or [])


def active_user(snapshot: World, username: str) -> dict[str, Any] | None:
    user: dict[str, Any] | None = snapshot["authentik"]["users"].get(username)
    return user if user and user.get("is_active") else None


def left_behind(before: World, after: World, contract: TenantContract, keep: tuple[str, ...] = ()) -> list[str]:
    """Lines of the world diff naming the tenant (slug, users, team account) other than deactivated user records
    (in Authentik and its LDAP outpost) and names in ``keep`` (what the winner legitimately shares)."""
    names = tuple(n for n in (contract.slug, *contract.usernames, contract.team_account or "") if n)
    inactive = [u for u in contract.usernames if not active_user(after, u)]
    gone_users = tuple(p for u in inactive for p in (f"authentik/users/{u}/", f"ldap/cn={u},"))
    return [
        line
        for line in mentioning(diff(before, after), names)
        if not line[2:].startswith(gone_users) and not any(word in line for word in keep)
    ]


async def finish(
    api: TenantflowClient, scenario: Scenario, lab: LabEndpoints, before: Before, contracts: list[TenantContract]
) -> None:
    """Offboard every tenant that completed, then count the scenario's objects."""
    ours = tuple(n for c in contracts for n in (c.slug, *c.usernames, c.team_account or "") if n)
    for contract in contracts:
        if await api.running(f"tenant/{contract.slug}") or contract.slug in world_snapshot(lab)["authentik"]["groups"]:
            gone = await offboard(api, contract, purge=True)
            assert gone.status == "completed", gone.message
    tally(scenario, lab, before, ours)


async def answer_reopened(
    api: TenantflowClient, contract: TenantContract, end: tuple[str, str], approve: bool
) -> tuple[str, str]:
    """A run whose gate reopened (its re-plan at apply saw the other run's objects) gets the new plan approved,
    or rejected, as an operator would on reading it; how it then ends, or ``reopened`` and the gate text."""
    if end[0] != "reopened":
        return end
    workflow_id = f"tenant/{contract.slug}"
    if not approve:
        await api.reject(workflow_id, "lost a race")
        assert (await settle(api, workflow_id, ""))[0] == "rejected"
        return end
    status = await api.status(workflow_id)
    await reviewer(api).approve(workflow_id, status.plan_hash or "")
    return await settle(api, workflow_id, status.plan_hash or "")


async def test_two_tenants_racing_for_auto_chosen_nodes(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    """Either both get disjoint nodes or one fails naming the conflict; never the same nodes."""
    scenario = STATS.scenario("two tenants racing, nodes chosen by tenantflow")
    assert baseline.end[0] == "completed"
    assert len(free_nodes(chaos_lab)) >= 4
    contracts = [
        small_tenant(chaos_lab, "tenant-na", ("auto-a1", "auto-a2")),
        small_tenant(chaos_lab, "tenant-nb", ("auto-b1", "auto-b2")),
    ]
    before = Before.take(chaos_lab)
    try:
        raced = await race(rig.api, contracts)
        ends = [await answer_reopened(rig.api, c, e, True) for c, e in zip(contracts, raced, strict=True)]
        after = world_snapshot(chaos_lab)
        held = {c.slug: reserved_nodes(after, c) for c, e in zip(contracts, ends, strict=True) if e[0] == "completed"}
        assert held and all(len(nodes) == 2 for nodes in held.values()), (held, ends)
        assert len({n for nodes in held.values() for n in nodes}) == 2 * len(held), f"nodes shared: {held}"
        for contract, (state, message) in zip(contracts, ends, strict=True):
            if state != "completed":
                assert state == "failed" and f"Reservation {contract.reservation_name} conflicts" in message, message
                left = left_behind(before.snapshot, after, contract)
                assert not left, "\n".join(left)
                STATS.runs_failed_as_expected += 1
        STATS.runs_completed += len(held)
        STATS.notes.append(f"auto-chosen nodes race: {held}; {[e[1][:80] for e in ends if e[0] != 'completed']}")
    finally:
        await finish(rig.api, scenario, chaos_lab, before, contracts)
    scenario.outcome = "both, disjoint nodes" if len(held) == 2 else "one won, one refused"


def split(
    lab: LabEndpoints, slugs: tuple[str, str], users: tuple[tuple[str, str], tuple[str, str]], **updates: Any
) -> list[TenantContract]:
    """Two small tenants on disjoint free nodes (so they pass the Reservation and meet further on)."""
    nodes = free_nodes(lab)
    assert len(nodes) >= 4, nodes
    return [
        small_tenant(lab, slug, names, nodes[2 * i : 2 * i + 2]).model_copy(update=updates)
        for i, (slug, names) in enumerate(zip(slugs, users, strict=True))
    ]


async def one_wins(
    rig: Rig,
    lab: LabEndpoints,
    scenario: Scenario,
    contracts: list[TenantContract],
    contested: str,
    check: Callable[[TenantContract, World], None],
) -> str:
    """Race the two; exactly one completes, the other fails (or its gate reopens, and it is rejected) naming
    ``contested``; ``check`` sees the winner's world; nothing of the loser but ``contested`` is left. Returns the
    loser's message."""
    before = Before.take(lab)
    try:
        raced = await race(rig.api, contracts)
        ends = [await answer_reopened(rig.api, c, e, False) for c, e in zip(contracts, raced, strict=True)]
        won = [c for c, e in zip(contracts, ends, strict=True) if e[0] == "completed"]
        assert len(won) == 1, ends
        winner, (loser, (state, message)) = (
            won[0],
            next((c, e) for c, e in zip(contracts, ends, strict=True) if c not in won),
        )
        assert state in ("failed", "reopened") and contested in message, (state, message)
        after = world_snapshot(lab)
        check(winner, after)
        left = left_behind(before.snapshot, after, loser, keep=(contested,))
        assert not left, "\n".join(left)
        STATS.runs_completed += 1
        STATS.runs_failed_as_expected += 1
        STATS.notes.append(f"race for {contested}: {winner.slug} won; {loser.slug} {state}: {message[:100]}")
    finally:
        await finish(rig.api, scenario, lab, before, contracts)
    scenario.outcome = f"one won, one {state}"
    return message


async def test_two_tenants_racing_for_one_username(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    """At most one creates the user; the other refuses naming it; the winner's user stays active in its group."""
    scenario = STATS.scenario("two tenants racing for one username")
    assert baseline.end[0] == "completed"
    contracts = split(chaos_lab, ("tenant-ua", "tenant-ub"), (("same-user", "user-a2"), ("same-user", "user-b2")))

    def check(winner: TenantContract, after: World) -> None:
        user = active_user(after, "same-user")
        assert user is not None, "the winner's user was deactivated"
        assert user["groups"] == [winner.slug], user
        assert not {c.slug for c in contracts} - {winner.slug} & set(after["authentik"]["groups"]), "loser's group"

    message = await one_wins(rig, chaos_lab, scenario, contracts, "same-user", check)
    assert "Authentik user same-user" in message, message


async def test_two_tenants_racing_for_one_team_account(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    """One wins the Slurm team account; the other fails naming it, and its rollback keeps the winner's account."""
    scenario = STATS.scenario("two tenants racing for one Slurm team account")
    assert baseline.end[0] == "completed"
    contracts = [
        c.model_copy(update={"slurm": c.slurm.model_copy(update={"team_account": "ml-team-shared"})})
        for c in split(chaos_lab, ("tenant-ta", "tenant-tb"), (("team-a1", "team-a2"), ("team-b1", "team-b2")))
    ]

    def check(winner: TenantContract, after: World) -> None:
        accounts = [line for line in after["slurm"]["account"] if line.startswith("ml-team-shared|")]
        assert len(accounts) == 1 and accounts[0].endswith(f"|{winner.slug}"), accounts
        assocs = [line for line in after["slurm"]["assoc"] if "|ml-team-shared|" in line]
        assert {line.split("|")[2] for line in assocs} == {"", *winner.usernames}, assocs

    message = await one_wins(rig, chaos_lab, scenario, contracts, "ml-team-shared", check)
    assert "already exists and is not tenantflow's" in message and "pick another slurm.team_account" in message
