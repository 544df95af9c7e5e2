"""Capacity of a tenant change: resize the node choice, drain the nodes given back, wait for their jobs, resume.

``change.preflight`` reads the tenant's Reservation and the node census (as ``capacity.preflight`` does), chooses
the nodes after the change (:func:`activities.capacity.node_resize.resize_nodes`) and the users the new contract
drops, and
names every job that holds them (``squeue``, matched by user or node): a removed user's running or pending job
refuses the change (nothing is cancelled: the finding names the jobs); a node to release that runs a job is drained
and waited for.
``change.drain`` drains the nodes to release (``scontrol update NodeName=... State=DRAIN Reason=...``, Slurm's
documented way to stop new jobs landing on a node while running ones finish); ``change.wait_drained`` polls
``squeue -w`` with heartbeats until no job is left on them (no job is ever killed); once the partition and the
Reservation no longer hold them, ``change.release_nodes`` resumes them (``State=RESUME``), only drains whose
reason is ours. A node drained, down or failing for another reason (an RMA) is never chosen, re-reasoned or
resumed. Sources: scontrol(1) ``update NodeName State=DRAIN|RESUME Reason``, squeue(1) ``-w -o -h``.
"""

from __future__ import annotations

from tenantflow.activities.capacity.node_choice import census, gpu_findings
from tenantflow.activities.capacity.node_resize import resize_nodes
from tenantflow.activities.capacity.steps import list_reservations
from tenantflow.activities.common import manifests
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.polling import Backoff, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import SlurmCtl, word, words
from tenantflow.activities.common.slurm_jobs import jobs
from tenantflow.models import runbook
from tenantflow.models.change import DRAIN_MARK, DRAIN_REASON
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.results import EnsureResult, Finding, Outcome, Severity
from tenantflow.models.tenant import TenantContract

LAYER = "change"
DRAIN_POLL = Backoff(2.0, 1.5, 10.0)
"""Well inside the step's heartbeat timeout: every probe heartbeats the jobs still running."""


def _own_nodes(objs: KubeObjects, contract: TenantContract) -> tuple[list[str], list[Finding]]:
    own = objs.get("Reservation", contract.reservation_name)
    if own is None or (own.get("spec") or {}).get("tenant") != contract.slug:
        return [], [
            Finding.failed(
                "change.reservation",
                f"tenant {contract.slug} has no Reservation {contract.reservation_name}: it is not onboarded",
                "onboard it first (tenantflow onboard CONTRACT); apply changes an onboarded tenant",
            )
        ]
    return sorted((own.get("spec") or {}).get("reservedNodes") or []), []


@defn(runbook.CHANGE_PREFLIGHT)
def preflight(inp: StepInput) -> StepResult:
    """The nodes after the change (``facts.nodes``), the nodes to release and the users to remove, with the jobs
    that hold them; ``inp.facts.remove_users`` must already name the users the new contract drops."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    own, findings = _own_nodes(objs, contract)
    if findings:
        return StepResult(facts=inp.facts, findings=findings)
    nodes = objs.list("Node", label_selector=f"{manifests.INSTANCE_TYPE_LABEL}={contract.capacity.sku}")
    found = census(nodes, list_reservations(objs), contract, own)
    ctl = SlurmCtl.connect(contract.cluster)
    busy = jobs(ctl, nodes=own)
    resize = resize_nodes(contract, found, own, busy, held_nodes(ctl, own))
    findings = resize.findings + gpu_findings(contract, resize.keep, found)
    findings += [
        Finding(
            check="change.release",
            ok=True,
            severity=Severity.warning if node in busy else Severity.info,
            message=f"node {node} leaves the tenant: drained, "
            + (
                f"then the run waits for its jobs {', '.join(busy[node])} to end (none is killed)"
                if node in busy
                else "idle"
            )
            + "; then removed from the partition and the Reservation, and resumed",
        )
        for node in resize.release
    ]
    held = jobs(ctl, users=inp.facts.remove_users)
    findings += [
        Finding.failed(
            "change.user_jobs",
            f"user {user} has running or pending jobs {', '.join(held[user])}: removing the user would orphan "
            "them; nothing was changed",
            f"wait for them to end (squeue -u {user}) or have the tenant cancel them, then apply again",
        )
        for user in sorted(held)
    ]
    facts = inp.facts.model_copy(update={"nodes": resize.keep, "release_nodes": resize.release})
    return StepResult(facts=facts, findings=findings)


UNAVAILABLE_FLAGS = ("DRAIN", "DOWN", "FAIL", "MAINT", "REBOOT")
"""Node state flags (scontrol(1) node ``State``, e.g. ``IDLE+DRAIN``, ``DOWN*``) that mean someone or something took
the node out of service."""


def _reason(ctl: SlurmCtl, node: str) -> str:
    """The node's drain reason (``Reason=`` of ``scontrol show node -o``, the rest of the line), or ''."""
    out = ctl.run(["scontrol", "show", "node", word(node), "-o"]).stdout
    return out.partition(" Reason=")[2].strip()


def held_nodes(ctl: SlurmCtl, nodes: list[str]) -> dict[str, str]:
    """The nodes drained, down or failing for a reason that is not a tenantflow release: node -> ``STATE: reason``
    (one ``scontrol show node -o`` line per node: ``NodeName=... State=IDLE+DRAIN ... Reason=RMA: GPU3 [...]``)."""
    if not nodes:
        return {}
    out = ctl.run(["scontrol", "show", "node", words(nodes), "-o"]).stdout
    held = {}
    for line in out.split("\n"):
        name = line.partition("NodeName=")[2].split(" ", 1)[0]
        state = line.partition(" State=")[2].split(" ", 1)[0]
        reason = line.partition(" Reason=")[2].strip()
        flags = state.replace("*", "").split("+")
        if name and any(flag.startswith(UNAVAILABLE_FLAGS) for flag in flags) and not reason.startswith(DRAIN_MARK):
            held[name] = f"{state}: {reason or 'no reason given'}"
    return held


@defn(runbook.DRAIN_NODES)
def drain(inp: StepInput) -> StepResult:
    """Drain the nodes the change releases, with a reason that marks the drain as ours; a node someone else drained
    or took down since the plan keeps its state and reason (``unchanged``), so the release never resumes it."""
    contract = inp.contract
    ctl = SlurmCtl.connect(contract.cluster)
    reason = DRAIN_REASON.format(slug=contract.slug, run=inp.run_id)
    held = held_nodes(ctl, inp.facts.release_nodes)
    results = []
    for node in inp.facts.release_nodes:
        if node in held:
            results.append(EnsureResult(layer=LAYER, kind="Node", name=node, outcome=Outcome.unchanged))
            continue
        ctl.run(["scontrol", "update", f"NodeName={word(node)}", "State=DRAIN", f"Reason={reason}"])
        results.append(EnsureResult(layer=LAYER, kind="Node", name=node, outcome=Outcome.updated))
    return StepResult(results=results, facts=inp.facts)


@defn(runbook.WAIT_DRAINED)
def wait_drained(inp: StepInput) -> StepResult:
    """Wait, heartbeating the jobs still running, until no job is left on the drained nodes."""
    ctl = SlurmCtl.connect(inp.contract.cluster)
    release = inp.facts.release_nodes
    poll_until(
        lambda: jobs(ctl, nodes=release),
        lambda left: not left,
        every=DRAIN_POLL,
        detail=lambda left: {"waiting_for_jobs": left},
    )
    return StepResult(facts=inp.facts)


def resume(ctl: SlurmCtl, nodes: list[str]) -> list[EnsureResult]:
    """Resume the nodes whose drain is ours; others are left as they are."""
    done = []
    for node in nodes:
        ours = _reason(ctl, node).startswith(DRAIN_MARK)
        if ours:
            ctl.run(["scontrol", "update", f"NodeName={word(node)}", "State=RESUME"])
        done.append(
            EnsureResult(layer=LAYER, kind="Node", name=node, outcome=Outcome.updated if ours else Outcome.unchanged)
        )
    return done


@defn(runbook.RELEASE_NODES)
def release_nodes(inp: StepInput) -> StepResult:
    """Resume the released nodes: the partition and the Reservation no longer hold them."""
    ctl = SlurmCtl.connect(inp.contract.cluster)
    return StepResult(results=resume(ctl, inp.facts.release_nodes), facts=inp.facts)
