"""Which nodes a change keeps and gives back: growing adds free nodes to the Reservation's, shrinking releases idle
nodes first, and a contract's node list is taken as it is; a slug change is refused with the reason."""

from __future__ import annotations

from tenantflow.activities.capacity.node_choice import NodeCensus
from tenantflow.activities.capacity.node_resize import resize_nodes
from tenantflow.models.change import removed_users, slug_refusal
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant
from tests.workflows.contract import EXAMPLES

OWN = ["gpu-01", "gpu-02", "gpu-03"]


def contract(gpus: int, nodes: list[str] | None = None) -> TenantContract:
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml")
    return foo.model_copy(update={"capacity": foo.capacity.model_copy(update={"gpus": gpus, "nodes": nodes})})


def test_growing_keeps_the_reservations_nodes_and_adds_the_first_free_ones() -> None:
    found = NodeCensus(free=["gpu-07", "gpu-08"], ours=OWN)
    resize = resize_nodes(contract(40), found, OWN, {})
    assert (resize.keep, resize.release, resize.findings) == ([*OWN, "gpu-07", "gpu-08"], [], [])


def test_growing_past_the_free_nodes_is_refused_naming_how_many_are_free() -> None:
    resize = resize_nodes(contract(48), NodeCensus(free=["gpu-07"], ours=OWN), OWN, {})
    [finding] = resize.findings
    assert not finding.ok and "need 3 more" in finding.message and "only 1 are free" in finding.message
    assert "at most 32" in finding.fix


def test_shrinking_releases_idle_nodes_first_then_the_last_busy_ones() -> None:
    busy = {"gpu-01": ["7 (RUNNING)"], "gpu-03": ["8 (RUNNING)"]}
    assert resize_nodes(contract(16), NodeCensus(ours=OWN), OWN, busy).release == ["gpu-02"]
    assert resize_nodes(contract(8), NodeCensus(ours=OWN), OWN, busy).release == ["gpu-02", "gpu-03"]
    all_busy = {node: ["9 (RUNNING)"] for node in OWN}
    shrunk = resize_nodes(contract(16), NodeCensus(ours=OWN), OWN, all_busy)
    assert (shrunk.keep, shrunk.release) == (["gpu-01", "gpu-02"], ["gpu-03"])


def test_a_listed_node_set_is_taken_as_it_is_and_its_unusable_nodes_named() -> None:
    found = NodeCensus(ours=OWN, free=["gpu-09"], reserved={"gpu-10": "tenant tenant-bar (Reservation r)"})
    resize = resize_nodes(contract(24, ["gpu-01", "gpu-09", "gpu-10"]), found, OWN, {})
    assert (resize.keep, resize.release) == (["gpu-01", "gpu-09", "gpu-10"], ["gpu-02", "gpu-03"])
    [finding] = resize.findings
    assert "gpu-10 is reserved by tenant tenant-bar" in finding.message


def test_a_listed_new_node_tainted_against_the_tenant_is_refused_but_an_own_node_is_not_reexamined() -> None:
    found = NodeCensus(
        ours=OWN,
        tainted=["gpu-09"],
        untolerated={"gpu-09": ["maintenance:NoSchedule"], "gpu-01": ["maintenance:NoSchedule"]},
    )
    resize = resize_nodes(contract(24, ["gpu-01", "gpu-02", "gpu-09"]), found, OWN, {})
    [finding] = resize.findings
    assert finding.check == "capacity.taints" and finding.message.startswith(
        "node gpu-09 has taint maintenance:NoSchedule, which the pods of tenant-foo do not tolerate"
    )
    assert "kubectl taint nodes gpu-09 maintenance:NoSchedule-" in finding.fix


def test_the_slug_cannot_change_and_the_refusal_says_why_and_what_to_do() -> None:
    foo = contract(64)
    assert slug_refusal(foo.slug, foo) is None
    refusal = slug_refusal("tenant-old", foo)
    assert refusal is not None and refusal.startswith("slug: ")
    assert "cannot be renamed in place" in refusal and "offboard tenant-old and onboard tenant-foo" in refusal


def test_removed_users_are_those_the_new_contract_drops() -> None:
    foo = contract(64)
    fewer = foo.model_copy(update={"users": foo.users[:1]})
    assert removed_users(foo, fewer) == ["bob", "carol"] and removed_users(fewer, foo) == []


def test_shrinking_never_chooses_a_node_held_by_an_admins_drain() -> None:
    held = {"gpu-02": "IDLE+DRAIN: RMA: GPU3 fails"}
    shrunk = resize_nodes(contract(16), NodeCensus(ours=OWN), OWN, {}, held)
    assert (shrunk.keep, shrunk.release, shrunk.findings) == (["gpu-01", "gpu-02"], ["gpu-03"], [])
    refused = resize_nodes(contract(8), NodeCensus(ours=OWN), OWN, {}, {**held, "gpu-03": "DOWN*: Not responding"})
    [finding] = refused.findings
    assert not finding.ok and refused.release == [] and refused.keep == OWN
    assert "gpu-02 (IDLE+DRAIN: RMA: GPU3 fails)" in finding.message and "gpu-03 (DOWN*" in finding.message
