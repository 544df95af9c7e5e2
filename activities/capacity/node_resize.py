"""Which nodes a tenant keeps, gains or gives back when its contract's GPU count changes (a pure choice).

Growing keeps every node of the tenant's Reservation and adds the first free ones of the census
(:mod:`activities.capacity.node_choice`); shrinking keeps the nodes and releases the rest, idle nodes first (a
node running or about to run a job is released only when there are not enough idle ones, and the run
then drains it and waits for its jobs). A node an administrator drained or that is down for a reason of its own
(``held``: an RMA, a failed GPU) is never chosen: releasing it would let the run's drain and resume put it back in
service; a shrink that needs it is refused, naming it. A contract that lists ``capacity.nodes`` gets exactly those,
each new one refused when it has a taint the tenant's pods do not tolerate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tenantflow.activities.capacity.node_choice import NodeCensus, taint_findings
from tenantflow.models.results import Finding
from tenantflow.models.tenant import TenantContract


@dataclass
class Resize:
    """The tenant's nodes after the change, the nodes it gives back, and why the change cannot be made."""

    keep: list[str]
    release: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def resize_nodes(
    contract: TenantContract,
    found: NodeCensus,
    own: list[str],
    busy: dict[str, list[str]],
    held: dict[str, str] | None = None,
) -> Resize:
    """The nodes of ``contract`` from the Reservation's ``own`` nodes; ``busy``: node -> its job ids; ``held``:
    node -> the state and reason of a drain or outage that is not ours."""
    held = held or {}
    cap = contract.capacity
    if cap.nodes is not None:
        wanted = sorted(cap.nodes)
        problems = [
            Finding.failed(
                "capacity.nodes",
                f"node {node} {problem}",
                "choose another node; free nodes: " + (", ".join(found.free) or "none"),
            )
            for node in wanted
            if node not in own and (problem := found.problem(node))
        ]
        problems += taint_findings(contract, [node for node in wanted if node not in own], found)
        return Resize(wanted, sorted(set(own) - set(wanted)), problems)
    need = cap.node_count
    if need >= len(own):
        more = need - len(own)
        if len(found.free) < more:
            return Resize(
                sorted(own),
                findings=[
                    Finding.failed(
                        "capacity.nodes",
                        f"{cap.gpus} GPUs need {more} more {cap.sku} nodes in pool {cap.hardware_pool}, but only "
                        f"{len(found.free)} are free ({found.summary()})",
                        f"lower capacity.gpus to at most {(len(own) + len(found.free)) * cap.gpus_per_node}, or "
                        "free nodes first",
                    )
                ],
            )
        return Resize(sorted([*own, *found.free[:more]]))
    candidates = [node for node in own if node not in held]
    if len(candidates) < len(own) - need:
        return Resize(
            sorted(own),
            findings=[
                Finding.failed(
                    "capacity.held_nodes",
                    f"shrinking to {need} nodes would release a node drained or down for another reason: "
                    + "; ".join(f"{node} ({held[node]})" for node in sorted(held)),
                    "resolve those drains first (or list the nodes to keep in capacity.nodes); tenantflow never "
                    "re-reasons or resumes a node it did not drain",
                )
            ],
        )
    by_preference = sorted(candidates, key=lambda node: (node in busy, [-ord(ch) for ch in node]))
    release = sorted(by_preference[: len(own) - need])
    return Resize(sorted(set(own) - set(release)), release)
