"""Simulated onboarding and drift activities (real names and types, a latency each) for orchestration benchmarks.

They measure Temporal and the worker, not the external systems: each sleeps
for its latency, like a blocking API round trip, and returns what the workflow
needs. They are plain functions, so the worker runs them in its activity
thread pool exactly like the real (synchronous) activities.

``LAB_SECONDS`` are the latencies one onboarding measured against the lab
(``tenantflow bench --lab-dir``, figure (a) on 2 loaded cores); a bench with a
lab uses the latencies it has just measured instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from temporalio import activity

from tenantflow.models.drift import DriftReport, DriftTarget, FleetDriftInput
from tenantflow.models.gates import GateNotice
from tenantflow.models.lifecycle import DEFAULT_REMINDER_DAYS, NoticeSent
from tenantflow.models.onboarding import Handover, StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.records import RecordKey, StoredRecord, TenantRecord
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.models.runbook import APPLY, DRIFT_TENANT, DRIFT_TENANTS, GATE_NOTIFY, PLAN, PREFLIGHT, ROLLBACK, SMOKE

NODES = [f"gpu-{i:03d}" for i in range(1, 9)]
LAB_SECONDS: dict[str, float] = {
    "capacity.preflight": 0.934,
    "identity.preflight": 1.174,
    "kube.preflight": 0.305,
    "slurm.preflight": 4.41,
    "storage.preflight": 0.261,
    "capacity.plan": 0.112,
    "identity.plan": 0.475,
    "kube.plan": 0.142,
    "slurm.plan": 0.685,
    "storage.plan": 1.648,
    "login.plan": 0.029,
    "capacity.reservation": 0.141,
    "capacity.wait_reservation": 0.228,
    "identity.group": 0.309,
    "identity.users": 0.721,
    "identity.verify_ldap": 0.326,
    "kube.namespace": 0.041,
    "kube.quota": 0.085,
    "kube.binding": 0.023,
    "kube.network_policy": 0.05,
    "kube.rbac": 0.029,
    "slurm.accounts": 1.294,
    "slurm.qos": 1.266,
    "slurm.users": 1.543,
    "slurm.partition": 0.678,
    "storage.filesystems": 1.033,
    "storage.quotas": 0.721,
    "storage.csi": 1.281,
    "login.release": 0.158,
    "login.verify": 1.431,
    "smoke.single_node": 2.027,
    "smoke.nccl": 3.509,
    "smoke.storage": 2.408,
    "validate.all": 2.732,
    "handover.render": 0.016,
    "drift.tenant": 1.996,
}


def simulated_activities(seconds: dict[str, float], default_s: float = 0.01) -> dict[str, Callable[..., Any]]:
    """Every activity an onboarding calls, by name, as plain functions sleeping ``seconds[name]`` (else default)."""

    def pause(name: str) -> None:
        time.sleep(seconds.get(name, default_s))

    def preflight(layer: str) -> Callable[..., Any]:
        def run(inp: StepInput) -> StepResult:
            pause(f"{layer}.preflight")
            return StepResult(facts=inp.facts.model_copy(update={"nodes": NODES}) if layer == "capacity" else inp.facts)

        return run

    def plan(layer: str) -> Callable[..., Any]:
        def run(inp: StepInput) -> list[PlanStep]:
            pause(f"{layer}.plan")
            return [PlanStep(layer=layer, kind="Object", name=f"{inp.contract.slug}-{layer}", action=Action.create)]

        return run

    def apply(layer: str, step: str) -> Callable[..., Any]:
        def run(inp: StepInput) -> StepResult:
            pause(f"{layer}.{step}")
            made = EnsureResult(layer=layer, kind="Object", name=f"{inp.contract.slug}-{step}", outcome=Outcome.created)
            return StepResult(results=[made], facts=inp.facts)

        return run

    def undo(layer: str) -> Callable[..., Any]:
        def run(inp: UndoInput) -> list[EnsureResult]:
            pause(f"{layer}.undo")
            return [r.model_copy(update={"outcome": Outcome.deleted}) for r in inp.results]

        return run

    def render(inp: StepInput) -> Handover:
        pause("handover.render")
        return Handover(markdown=f"# {inp.contract.slug}\n", sheet={}, capacity_contract={})

    def record(inp: TenantRecord) -> StoredRecord:
        pause("records.tenant")
        key = RecordKey.of(inp)
        return StoredRecord(
            kind=key.kind,
            name=key.secret_name(1),
            namespace="tenantflow-system",
            version=1,
            status=inp.status,
            run=inp.run,
            created=True,
        )

    def reminder_days(tenant: str) -> list[int]:
        """The lifecycle a completed onboarding starts reads its reminders, then sleeps past the benchmark."""
        return list(DEFAULT_REMINDER_DAYS)

    made: dict[str, Callable[..., Any]] = {}
    made.update({s.name: preflight(s.layer) for s in PREFLIGHT})
    made.update({s.name: plan(s.layer) for s in PLAN})
    made.update({s.name: apply(s.layer, s.short) for s in (*APPLY, *SMOKE)})
    made.update({s.name: undo(s.layer) for s in ROLLBACK})
    made["validate.all"] = apply("validate", "all")
    made["handover.render"] = render
    made["records.tenant"] = record

    def drift_tenants(inp: FleetDriftInput) -> list[str]:
        pause("drift.tenants")
        return list(inp.slugs)

    def drift_tenant(target: DriftTarget) -> DriftReport:
        pause("drift.tenant")
        return DriftReport(slug=target.slug)

    made[DRIFT_TENANTS.name] = drift_tenants
    made[DRIFT_TENANT.name] = drift_tenant

    def notify_gate(notice: GateNotice) -> NoticeSent:
        """The plan gate's notification (a local activity the gated run awaits): sent nowhere."""
        pause(GATE_NOTIFY.name)
        return NoticeSent(delivered=False, detail="simulated")

    made["lifecycle.reminder_days"] = reminder_days
    made[GATE_NOTIFY.name] = notify_gate
    return made


def as_activities(functions: dict[str, Callable[..., Any]]) -> list[Callable[..., Any]]:
    return [activity.defn(name=name)(fn) for name, fn in functions.items()]
