"""Two tenants started at the same time ask for the same two nodes: exactly one gets them.

Both pass preflight (no Reservation exists yet) and are approved at the same moment, so they race at the
Reservation: the reservation operator grants the nodes to one and reports the other's conflict, whose run fails
naming the node and the holder and rolls back. Nothing of the loser is left in any layer (world diff); the
winner is offboarded with purge, leaving only the deactivated user records the runbook keeps.
"""

from __future__ import annotations

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tests.chaos.conftest import Baseline, Rig, small_tenant
from tests.chaos.kit import STATS
from tests.chaos.racing import free_nodes, mentioning, race
from tests.integration.runs import offboard
from tests.integration.world import World, diff, world_snapshot

USERS = {"tenant-ra": ("racer-a1", "racer-a2"), "tenant-rb": ("racer-b1", "racer-b2")}


async def test_two_tenants_racing_for_the_same_nodes(rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline) -> None:
    scenario = STATS.scenario("two tenants racing for the same two nodes")
    assert baseline.end[0] == "completed"
    nodes = free_nodes(chaos_lab)[:2]
    assert len(nodes) == 2, nodes
    contracts = [small_tenant(chaos_lab, slug, users, nodes) for slug, users in USERS.items()]
    before = world_snapshot(chaos_lab)
    ends = await race(rig.api, contracts)
    won = [c for c, end in zip(contracts, ends, strict=True) if end[0] == "completed"]
    try:
        assert len(won) == 1, ends
        check_race(before, world_snapshot(chaos_lab), nodes, won[0], ends, contracts)
    finally:
        for contract in won:
            gone = await offboard(rig.api, contract, purge=True)
            assert gone.status == "completed", gone.message
    residue = diff(before, world_snapshot(chaos_lab))
    assert all(line.startswith("+ ") for line in residue), "\n".join(residue)
    assert mentioning(residue, USERS[won[0].slug]) == residue, "\n".join(residue)
    scenario.outcome = "one won, one refused"


def check_race(
    before: World,
    after: World,
    nodes: list[str],
    winner: TenantContract,
    ends: list[tuple[str, str]],
    contracts: list[TenantContract],
) -> None:
    """The loser failed naming the nodes and their holder, and left nothing anywhere."""
    loser, (state, message) = next((c, e) for c, e in zip(contracts, ends, strict=True) if c is not winner)
    assert state == "failed", message
    assert f"Reservation {loser.reservation_name} conflicts" in message, message
    assert all(
        f"node {n} is already in Reservation {winner.reservation_name} of tenant {winner.slug}" in message
        for n in nodes
    ), message
    STATS.runs_completed += 1
    STATS.runs_failed_as_expected += 1
    STATS.notes.append(f"race for {', '.join(nodes)}: {winner.slug} won; {loser.slug}: {message[:100]}")
    left = diff(before, after)
    assert not mentioning(left, (loser.slug, *USERS[loser.slug])), "\n".join(left)
    assert left, "the winner wrote nothing"
