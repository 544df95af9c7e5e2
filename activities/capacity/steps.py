"""Capacity layer (runbook step 1): choose healthy, unreserved GPU nodes and reserve them.

``capacity.preflight`` reads nodes and Reservations and picks (or checks) the nodes
(the census and the choice: :mod:`activities.capacity.node_choice`);
``capacity.reservation`` ensures the cluster-scoped Reservation; ``capacity.wait_reservation``
polls until the reservation operator has labelled exactly those nodes (or reported a
conflict); ``capacity.undo`` deletes the Reservation and waits for the operator to
release the nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.activities.capacity.node_choice import census, choose_nodes, gpu_findings, taint_findings
from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Finding, LabelledNodes, Outcome, Severity
from tenantflow.models.sku import SKUS
from tenantflow.models.tenant import TenantContract

LAYER = "capacity"
EVICT_WARNING = (
    "removing a node from the Reservation (e.g. for an RMA) kills the tenant's running jobs on it "
    "at once; the runbook asks for evictOnRelease=false so the operator drains gracefully"
)
RELEASE_ATTEMPTS = 20


def _slug_findings(objs: KubeObjects, contract: TenantContract, own: dict[str, Any] | None) -> list[Finding]:
    findings: list[Finding] = []
    if own is not None and (own.get("spec") or {}).get("tenant") != contract.slug:
        findings.append(
            Finding.failed(
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
            Finding.failed(
                "capacity.slug",
                f"namespace {contract.namespace} already exists and belongs to {other}: the slug is in use",
                "choose another slug",
            )
        )
    return findings


def list_reservations(objs: KubeObjects) -> list[dict[str, Any]]:
    api_version = settings().reservation_api_version
    group = api_version.partition("/")[0]
    try:
        return objs.list("Reservation")
    except ApplicationError as err:
        if err.type == "NotFound":
            raise fail(
                "PreflightFailed",
                f"the Reservation CRD (reservations.{group}) is not served by the cluster at {api_version} "
                "(RESERVATION_API_VERSION); install the reservation operator, or set RESERVATION_API_VERSION to "
                "the group/version it serves",
            ) from None
        raise


@defn(runbook.CAPACITY.preflight)
def preflight(inp: StepInput) -> StepResult:
    contract = inp.contract
    cap = contract.capacity
    objs = KubeObjects(contract.cluster)
    reservations = list_reservations(objs)
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
            Finding.failed(
                "capacity.sku",
                f"no node has {manifests.INSTANCE_TYPE_LABEL}={cap.sku}; the cluster "
                f"has: " + (", ".join(f"{t} ({n})" for t, n in sorted(types.items())) or "no nodes"),
                "set capacity.sku to a SKU the cluster has (known SKUs: " + ", ".join(sorted(SKUS)) + ")",
            )
        )
        return StepResult(facts=inp.facts.model_copy(update={"nodes": []}), findings=findings)
    own_nodes = sorted((own.get("spec") or {}).get("reservedNodes") or []) if own else []
    found = census(nodes, reservations, contract, own_nodes)
    chosen, choice_findings = choose_nodes(contract, found, own)
    findings += choice_findings + gpu_findings(contract, chosen, found) + taint_findings(contract, chosen, found)
    if not any(not f.ok for f in findings):
        reused = " (existing Reservation reused)" if own else ""
        nodes_text = f"{len(chosen)} {cap.sku} nodes ({cap.gpus} GPUs): {', '.join(chosen)}{reused}"
        findings.append(Finding.passed("capacity.nodes", nodes_text))
    if contract.capacity.evict_on_release:
        findings.append(
            Finding.failed(
                check="capacity.evict_on_release",
                severity=Severity.warning,
                message=f"the contract asks for evictOnRelease=true: {EVICT_WARNING}",
                fix="set capacity.evict_on_release: false unless the tenant accepts it",
            )
        )
    return StepResult(facts=inp.facts.model_copy(update={"nodes": chosen}), findings=findings)


def _reservation_owner(contract: TenantContract) -> Any:
    def claimed_by(obj: dict[str, Any]) -> str | None:
        tenant = (obj.get("spec") or {}).get("tenant")
        return f"tenant {tenant}" if tenant != contract.slug else None

    return claimed_by


@defn(runbook.CAPACITY.plan)
def plan(inp: StepInput) -> list[PlanStep]:
    """The Reservation's plan step, naming the cluster (the contract's registry name) it goes to: a plan hash covers
    the steps only, so the onboarding's, change's and offboarding's approvals bind the cluster through it, and a
    contract that names another cluster of the worker's registry than its approver assumes shows it."""
    contract = inp.contract
    desired = manifests.reservation(contract, inp.facts.nodes, settings().reservation_api_version)
    return [
        kubeensure.plan_step(
            KubeObjects(contract.cluster),
            LAYER,
            desired,
            contract.slug,
            detail={
                "cluster": contract.cluster.context,
                "tenant": contract.slug,
                "nodes": desired["spec"]["reservedNodes"],
                "gpus": contract.capacity.gpus,
                "sku": contract.capacity.sku,
                "hardware_pool": contract.capacity.hardware_pool,
                "taint": f"{manifests.RESERVED_LABEL}={contract.slug}:NoSchedule",
                "evictOnRelease": contract.capacity.evict_on_release,
                **({"warning": EVICT_WARNING} if contract.capacity.evict_on_release else {}),
            },
        )
    ]


@defn(runbook.CAPACITY_RESERVATION)
def reservation(inp: StepInput) -> StepResult:
    contract = inp.contract
    if not inp.facts.nodes:
        raise fail("Invalid", "no nodes were chosen; run capacity.preflight first")
    result = kubeensure.ensure(
        KubeObjects(contract.cluster),
        LAYER,
        manifests.reservation(contract, inp.facts.nodes, settings().reservation_api_version),
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


@defn(runbook.CAPACITY_WAIT_RESERVATION)
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


@defn(runbook.CAPACITY.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Delete the Reservation we created (or put back one we changed), then wait for the nodes' release."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    done = kubeensure.undo(objs, LAYER, inp.results, contract.slug)
    if inp.step != runbook.CAPACITY_RESERVATION.short or objs.get("Reservation", contract.reservation_name) is not None:
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
