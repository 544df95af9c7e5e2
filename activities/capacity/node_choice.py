"""Which GPU nodes a tenant can get (runbook step 1): the node census and the choice.

:func:`census` sorts every node of the contract's SKU into free, this tenant's own,
reserved by another tenant (its Reservation or node label), NotReady, cordoned or in
another hardware pool, or tainted against the tenant's pods; :func:`choose_nodes` picks
the contract's nodes (the existing Reservation's, the listed ones, or the first free ones) with a finding naming each
node that cannot be used; :func:`gpu_findings` checks each chosen node reports the
SKU's GPU count, :func:`taint_findings` that the tenant's pods tolerate each chosen node's taints
(:mod:`activities.capacity.taints`). Pure functions of objects read by :mod:`activities.capacity.steps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tenantflow.activities.capacity.taints import untolerated
from tenantflow.activities.common import manifests
from tenantflow.models.results import Finding
from tenantflow.models.tenant import TenantContract


@dataclass
class NodeCensus:
    """Every node of the SKU, sorted into why it can or cannot be used."""

    free: list[str] = field(default_factory=list)
    ours: list[str] = field(default_factory=list)
    reserved: dict[str, str] = field(default_factory=dict)
    """node -> who holds it (tenant and Reservation)"""
    not_ready: list[str] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    other_pool: list[str] = field(default_factory=list)
    tainted: list[str] = field(default_factory=list)
    """otherwise free nodes with a taint the tenant's pods do not tolerate"""
    untolerated: dict[str, list[str]] = field(default_factory=dict)
    """node -> its taints the tenant's pods do not tolerate (every node that has one)"""
    gpus: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{len(self.free)} free, {len(self.reserved)} reserved by other tenants, "
            f"{len(self.not_ready)} NotReady, {len(self.cordoned)} cordoned, "
            f"{len(self.other_pool)} in other hardware pools, "
            f"{len(self.tainted)} with taints the tenant's pods do not tolerate"
        )

    def problem(self, node: str) -> str | None:
        if node in self.reserved:
            return f"is reserved by {self.reserved[node]}"
        if node in self.not_ready:
            return "is NotReady"
        if node in self.cordoned:
            return "is cordoned (SchedulingDisabled)"
        if node in self.other_pool:
            return "is in another hardware pool"
        if node not in self.free and node not in self.ours and node not in self.tainted:
            return "does not exist or is not of the contract's SKU"
        return None


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _gpu_capacity(node: dict[str, Any]) -> int:
    value = ((node.get("status") or {}).get("capacity") or {}).get(manifests.GPU_RESOURCE, "0")
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _other_claims(reservations: list[dict[str, Any]], contract: TenantContract) -> dict[str, str]:
    claims: dict[str, str] = {}
    for res in reservations:
        name = res["metadata"]["name"]
        tenant = (res.get("spec") or {}).get("tenant", "?")
        if name == contract.reservation_name and tenant == contract.slug:
            continue
        for node in (res.get("spec") or {}).get("reservedNodes") or []:
            claims.setdefault(node, f"tenant {tenant} (Reservation {name})")
    return claims


def census(
    nodes: list[dict[str, Any]], reservations: list[dict[str, Any]], contract: TenantContract, own_nodes: list[str]
) -> NodeCensus:
    """Sort every node of the contract's SKU into why it can or cannot be this tenant's."""
    claims = _other_claims(reservations, contract)
    out = NodeCensus()
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        out.gpus[name] = _gpu_capacity(node)
        if blocking := untolerated(node, contract.slug):
            out.untolerated[name] = blocking
        holder = labels.get(manifests.RESERVED_LABEL)
        if name in own_nodes and (name not in claims or holder == contract.slug):
            out.ours.append(name)
        elif name in claims:
            out.reserved[name] = claims[name]
        elif holder and holder != contract.slug:
            out.reserved[name] = f"tenant {holder} (node label {manifests.RESERVED_LABEL}={holder})"
        elif not _ready(node):
            out.not_ready.append(name)
        elif (node.get("spec") or {}).get("unschedulable"):
            out.cordoned.append(name)
        elif labels.get(manifests.HARDWARE_POOL_LABEL) != contract.capacity.hardware_pool:
            out.other_pool.append(name)
        elif name in out.untolerated:
            out.tainted.append(name)
        else:
            out.free.append(name)
    return out


def choose_nodes(
    contract: TenantContract, found: NodeCensus, own: dict[str, Any] | None
) -> tuple[list[str], list[Finding]]:
    """The nodes the tenant gets (its Reservation's, the contract's list, or the first free) and why any cannot be."""
    cap = contract.capacity
    need = cap.node_count
    if own is not None:
        chosen = sorted((own.get("spec") or {}).get("reservedNodes") or [])
        held = [
            Finding.failed(
                "capacity.nodes",
                f"node {node} of Reservation {contract.reservation_name} is also held by {found.reserved[node]}",
                "release it from the other Reservation, or offboard this tenant and re-run with other nodes",
            )
            for node in chosen
            if node in found.reserved
        ]
        if held:
            return chosen, held
        if cap.nodes is not None and sorted(cap.nodes) != chosen:
            return chosen, [
                Finding.failed(
                    "capacity.nodes",
                    f"Reservation {contract.reservation_name} already holds "
                    f"{', '.join(chosen)}, not the contract's {', '.join(sorted(cap.nodes))}",
                    "make capacity.nodes match the Reservation, or offboard and re-run",
                )
            ]
        return chosen, []
    if cap.nodes is not None:
        findings = [
            Finding.failed(
                "capacity.nodes",
                f"node {node} {problem}",
                "choose another node; free nodes: " + (", ".join(found.free) or "none"),
            )
            for node in sorted(cap.nodes)
            if (problem := found.problem(node))
        ]
        return sorted(cap.nodes), findings
    if len(found.free) < need:
        return [], [
            Finding.failed(
                "capacity.nodes",
                f"{cap.gpus} {cap.sku} GPUs need {need} healthy unreserved nodes in "
                f"pool {cap.hardware_pool}, but only {len(found.free)} are available "
                f"({found.summary()})",
                f"lower capacity.gpus to at most {len(found.free) * cap.gpus_per_node}, or uncordon, "
                "repair, untaint or release nodes first",
            )
        ]
    return found.free[:need], []


def gpu_findings(contract: TenantContract, chosen: list[str], found: NodeCensus) -> list[Finding]:
    """Each chosen node reports the SKU's GPU count, and the nodes add up to the contract's GPUs."""
    cap = contract.capacity
    findings = [
        Finding.failed(
            "capacity.gpus",
            f"node {node} reports {found.gpus.get(node, 0)} {manifests.GPU_RESOURCE} "
            f"but a {cap.sku} node has {cap.gpus_per_node}",
            "fix the node's GPU device plugin or pick another node",
        )
        for node in chosen
        if node in found.gpus and found.gpus[node] != cap.gpus_per_node
    ]
    if chosen and len(chosen) * cap.gpus_per_node != cap.gpus:
        findings.append(
            Finding.failed(
                "capacity.gpus",
                f"{len(chosen)} nodes x {cap.gpus_per_node} GPUs = "
                f"{len(chosen) * cap.gpus_per_node}, not the contract's {cap.gpus}",
                f"list exactly {cap.node_count} nodes",
            )
        )
    return findings


def taint_findings(contract: TenantContract, chosen: list[str], found: NodeCensus) -> list[Finding]:
    """Each chosen node with a ``NoSchedule``/``NoExecute`` taint the tenant's pods do not tolerate (its jobs and
    login pod would never be scheduled there), naming the taint and the fix; a node refused for another reason
    (reserved, NotReady, cordoned: each comes with a taint of its own) is not named twice."""
    return [
        Finding.failed(
            "capacity.taints",
            f"node {node} has taint {taint}, which the pods of {contract.slug} do not tolerate (the "
            f"ReservationBinding gives them a toleration of {manifests.RESERVED_LABEL}={contract.slug} only)",
            f"remove the taint if it is stale (kubectl taint nodes {node} {taint}-), or choose another node",
        )
        for node in chosen
        if not found.problem(node)
        for taint in found.untolerated.get(node, [])
    ]
