"""Capacity layer (runbook step 1): choose healthy, unreserved GPU nodes and reserve them.

``capacity.preflight`` reads nodes and Reservations and picks (or checks) the nodes;
``capacity.reservation`` ensures the cluster-scoped Reservation; ``capacity.wait_reservation``
polls until the reservation operator has labelled exactly those nodes (or reported a
conflict); ``capacity.undo`` deletes the Reservation and waits for the operator to
release the nodes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities import kubeensure, manifests
from tenantflow.activities.errors import fail
from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.activities.polling import from_poll_interval, poll_until
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Finding, LabelledNodes, Outcome, Severity
from tenantflow.models.sku import SKUS
from tenantflow.models.tenant import TenantContract

LAYER = "capacity"
RELEASE_ATTEMPTS = 20


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
    gpus: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{len(self.free)} free, {len(self.reserved)} reserved by other tenants, "
            f"{len(self.not_ready)} NotReady, {len(self.cordoned)} cordoned, "
            f"{len(self.other_pool)} in other hardware pools"
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
        if node not in self.free and node not in self.ours:
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
    claims = _other_claims(reservations, contract)
    out = NodeCensus()
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        out.gpus[name] = _gpu_capacity(node)
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
        else:
            out.free.append(name)
    return out


def _error(check: str, message: str, fix: str) -> Finding:
    return Finding(check=check, ok=False, severity=Severity.error, message=message, fix=fix)


def _choose(contract: TenantContract, found: NodeCensus, own: dict[str, Any] | None) -> tuple[list[str], list[Finding]]:
    cap = contract.capacity
    need = cap.node_count
    if own is not None:
        chosen = sorted((own.get("spec") or {}).get("reservedNodes") or [])
        held = [
            _error(
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
                _error(
                    "capacity.nodes",
                    f"Reservation {contract.reservation_name} already holds "
                    f"{', '.join(chosen)}, not the contract's {', '.join(sorted(cap.nodes))}",
                    "make capacity.nodes match the Reservation, or offboard and re-run",
                )
            ]
        return chosen, []
    if cap.nodes is not None:
        findings = [
            _error(
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
            _error(
                "capacity.nodes",
                f"{cap.gpus} {cap.sku} GPUs need {need} healthy unreserved nodes in "
                f"pool {cap.hardware_pool}, but only {len(found.free)} are available "
                f"({found.summary()})",
                f"lower capacity.gpus to at most {len(found.free) * cap.gpus_per_node}, or uncordon, "
                "repair or release nodes first",
            )
        ]
    return found.free[:need], []


def _slug_findings(objs: KubeObjects, contract: TenantContract, own: dict[str, Any] | None) -> list[Finding]:
    findings: list[Finding] = []
    if own is not None and (own.get("spec") or {}).get("tenant") != contract.slug:
        findings.append(
            _error(
                "capacity.slug",
                f"Reservation {contract.reservation_name} already exists for "
                f"tenant {(own.get('spec') or {}).get('tenant')}: the slug is in use",
                "choose another slug",
            )
        )
    ns = objs.get("Namespace", contract.namespace)
    other = kubeensure.foreign_owner(ns, contract.slug) if ns else None
    if other:
        findings.append(
            _error(
                "capacity.slug",
                f"namespace {contract.namespace} already exists and belongs to {other}: the slug is in use",
                "choose another slug",
            )
        )
    return findings


def _gpu_findings(contract: TenantContract, chosen: list[str], found: NodeCensus) -> list[Finding]:
    cap = contract.capacity
    findings = [
        _error(
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
            _error(
                "capacity.gpus",
                f"{len(chosen)} nodes x {cap.gpus_per_node} GPUs = "
                f"{len(chosen) * cap.gpus_per_node}, not the contract's {cap.gpus}",
                f"list exactly {cap.node_count} nodes",
            )
        )
    return findings


def _list_reservations(objs: KubeObjects) -> list[dict[str, Any]]:
    try:
        return objs.list("Reservation")
    except ApplicationError as err:
        if err.type == "NotFound":
            raise fail(
                "PreflightFailed",
                "the Reservation CRD (reservations.scheduling.example.io) is not "
                "served by the cluster; install the reservation operator",
            ) from None
        raise


@activity.defn(name="capacity.preflight")
def preflight(inp: StepInput) -> StepResult:
    contract = inp.contract
    cap = contract.capacity
    objs = KubeObjects(contract.cluster)
    reservations = _list_reservations(objs)
    own = next((r for r in reservations if r["metadata"]["name"] == contract.reservation_name), None)
    findings = _slug_findings(objs, contract, own)
    if own is not None and (own.get("spec") or {}).get("tenant") != contract.slug:
        own = None
    nodes = objs.list("Node", label_selector=f"{manifests.INSTANCE_TYPE_LABEL}={cap.sku}")
    if not nodes:
        types = Counter(
            (n["metadata"].get("labels") or {}).get(manifests.INSTANCE_TYPE_LABEL, "<none>") for n in objs.list("Node")
        )
        findings.append(
            _error(
                "capacity.sku",
                f"no node has {manifests.INSTANCE_TYPE_LABEL}={cap.sku}; the cluster "
                f"has: " + (", ".join(f"{t} ({n})" for t, n in sorted(types.items())) or "no nodes"),
                "set capacity.sku to a SKU the cluster has (known SKUs: " + ", ".join(sorted(SKUS)) + ")",
            )
        )
        return StepResult(facts=inp.facts.model_copy(update={"nodes": []}), findings=findings)
    own_nodes = sorted((own.get("spec") or {}).get("reservedNodes") or []) if own else []
    found = census(nodes, reservations, contract, own_nodes)
    chosen, choice_findings = _choose(contract, found, own)
    findings += choice_findings + _gpu_findings(contract, chosen, found)
    if not any(not f.ok for f in findings):
        findings.append(
            Finding(
                check="capacity.nodes",
                ok=True,
                severity=Severity.info,
                message=f"{len(chosen)} {cap.sku} nodes ({cap.gpus} GPUs): {', '.join(chosen)}"
                + (" (existing Reservation reused)" if own else ""),
            )
        )
    return StepResult(facts=inp.facts.model_copy(update={"nodes": chosen}), findings=findings)


def _reservation_owner(contract: TenantContract) -> Any:
    def claimed_by(obj: dict[str, Any]) -> str | None:
        tenant = (obj.get("spec") or {}).get("tenant")
        return f"tenant {tenant}" if tenant != contract.slug else None

    return claimed_by


@activity.defn(name="capacity.plan")
def plan(inp: StepInput) -> list[PlanStep]:
    contract = inp.contract
    desired = manifests.reservation(contract, inp.facts.nodes)
    return [
        kubeensure.plan_step(
            KubeObjects(contract.cluster),
            LAYER,
            desired,
            contract.slug,
            detail={
                "tenant": contract.slug,
                "nodes": desired["spec"]["reservedNodes"],
                "gpus": contract.capacity.gpus,
                "sku": contract.capacity.sku,
                "hardware_pool": contract.capacity.hardware_pool,
                "taint": f"{manifests.RESERVED_LABEL}={contract.slug}:NoSchedule",
                "evictOnRelease": False,
            },
        )
    ]


@activity.defn(name="capacity.reservation")
def reservation(inp: StepInput) -> StepResult:
    contract = inp.contract
    if not inp.facts.nodes:
        raise fail("Invalid", "no nodes were chosen; run capacity.preflight first")
    result = kubeensure.ensure(
        KubeObjects(contract.cluster),
        LAYER,
        manifests.reservation(contract, inp.facts.nodes),
        contract.slug,
        inp.run_id,
        claimed_by=_reservation_owner(contract),
    )
    return StepResult(results=[result], facts=inp.facts)


def _conflict_message(contract: TenantContract, conflicts: list[dict[str, Any]]) -> str:
    parts = [
        f"node {c.get('node')} is already in Reservation {c.get('reservation', '?')} of tenant {c.get('tenant', '?')}"
        for c in conflicts
    ]
    return (
        f"Reservation {contract.reservation_name} conflicts: "
        + "; ".join(parts)
        + "; release those nodes or choose others, then re-run"
    )


def _labelled(objs: KubeObjects, slug: str) -> list[str]:
    return sorted(n["metadata"]["name"] for n in objs.list("Node", label_selector=f"{manifests.RESERVED_LABEL}={slug}"))


@activity.defn(name="capacity.wait_reservation")
def wait_reservation(inp: StepInput) -> StepResult:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    want = sorted(inp.facts.nodes)

    def labelled() -> list[str]:
        res = objs.get("Reservation", contract.reservation_name)
        if res is None:
            raise fail(
                "NotFound", f"Reservation {contract.reservation_name} does not exist; run capacity.reservation first"
            )
        conflicts = (res.get("status") or {}).get("conflicts") or []
        if conflicts:
            raise fail("Conflict", _conflict_message(contract, conflicts))
        return _labelled(objs, contract.slug)

    have = poll_until(
        labelled,
        lambda have: have == want,
        every=from_poll_interval(),
        detail=lambda have: {
            "labelled": have,
            "missing": sorted(set(want) - set(have)),
            "unexpected": sorted(set(have) - set(want)),
        },
    ).value
    return StepResult(
        facts=inp.facts,
        results=[
            EnsureResult(
                layer=LAYER,
                kind="Reservation",
                name=contract.reservation_name,
                outcome=Outcome.unchanged,
                data=LabelledNodes(labelled=have),
            )
        ],
    )


@activity.defn(name="capacity.undo")
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Delete the Reservation we created (or put back one we changed), then wait for the nodes' release."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    done = kubeensure.undo(objs, LAYER, inp.results, contract.slug)
    if inp.step != "reservation" or objs.get("Reservation", contract.reservation_name) is not None:
        return done
    released = poll_until(
        lambda: _labelled(objs, contract.slug),
        lambda held: not held,
        every=from_poll_interval(),
        attempts=RELEASE_ATTEMPTS,
        detail=lambda held: {"still_labelled": held},
    )
    if not released.done:
        raise ApplicationError(
            f"the reservation operator has not released {', '.join(released.value)} yet", type="Unavailable"
        )
    return done


ACTIVITIES = [preflight, plan, reservation, wait_reservation, undo]
