"""In-memory activities for the catalogue's onboarding steps (their names and types), for testing orchestration alone.

They record every call so tests can assert order (apply, undo) and make a
chosen step fail, a smoke step report an error finding a number of times, a
chosen undo fail a number of times, a read-only step fail retryably a number of
times, read-only steps wait for each other (so they pass only when run at once),
or a plan change between two planning rounds. The tenant's hold is asked about with the real
``records.tenant_holder`` (it reads the test's own Temporal server). Integration with
the real systems is tested elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.records.hold import tenant_holder
from tenantflow.models.gates import GateNotice
from tenantflow.models.lifecycle import NoticeSent
from tenantflow.models.offboarding import JOB_KIND, JobsToCancel
from tenantflow.models.onboarding import Handover, StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.records import (
    LatestContract,
    RecordedTenant,
    RecordKey,
    RecordKind,
    RecordsQuery,
    StoredRecord,
    TenantRecord,
)
from tenantflow.models.results import EnsureResult, Finding, Outcome, Severity
from tenantflow.models.runbook import (
    APPLY,
    CAPACITY,
    GATE_NOTIFY,
    HANDOVER,
    LATEST_TENANT,
    PLAN,
    PREFLIGHT,
    READ_TENANT_RECORDS,
    RECORD_TENANT,
    ROLLBACK,
    SLURM_CANCEL_JOBS,
    SLURM_JOBS,
    SMOKE,
    VALIDATE,
)
from tenantflow.models.step import Step

NODES = [f"gpu-0{i}" for i in range(1, 9)]
RENDEZVOUS_S = 30.0
SMOKE_FIX = "set the injected switch right on the node, then re-run the smoke checks"
"""How long a read-only step waits at its rendezvous before it fails as having run alone."""


@dataclass
class FakeWorld:
    fail_at: str | None = None
    preflight_error: str | None = None
    present: bool = False
    """Plans report every object as existing (unchanged), as for a finished tenant."""
    undo_failures: dict[str, int] = field(default_factory=dict)
    """``layer.undo:step`` -> how many more times that undo fails (non-retryably, as a refusal does)."""
    hang_at: str | None = None
    """An apply step that heartbeats until it is cancelled (to cancel a run mid-apply)."""
    appeared: list[PlanStep] = field(default_factory=list)
    """Objects the plan activities of the same layer also report (something made by hand after planning)."""
    refusals: list[Finding] = field(default_factory=list)
    """Findings the preflight of each one's layer (its check's prefix) also reports (something that appeared later)."""
    flaky: dict[str, int] = field(default_factory=dict)
    """Read-only step name -> how many more times it fails retryably (a transient refusal)."""
    rendezvous: dict[str, asyncio.Barrier] = field(default_factory=dict)
    """Read-only step name -> the barrier it waits at: it passes only when every step sharing the barrier runs."""
    smoke_errors: dict[str, int] = field(default_factory=dict)
    """Smoke step name -> how many more of its runs report an error finding (with the fix :data:`SMOKE_FIX`)."""
    calls: list[str] = field(default_factory=list)
    records: list[TenantRecord] = field(default_factory=list)
    """The tenant records the runs stored, in order (``records.latest_tenant`` reads the last of a tenant's)."""
    records_unreadable: str | None = None
    """``records.latest_tenant`` fails (non-retryably, as a refusal does) with this message."""
    gate_notifier: bool = True
    """Register the fake ``gates.notify`` (False: the worker gets the real one, or none)."""
    gate_notices: list[GateNotice] = field(default_factory=list)
    """What ``gates.notify`` was given, in order (kept apart from ``calls``: a notification is no step of the run)."""
    jobs: list[str] = field(default_factory=list)
    """The ids of the tenant's running jobs: ``slurm.jobs`` lists them, ``slurm.cancel_jobs`` cancels them."""
    late_jobs: list[str] = field(default_factory=list)
    """Jobs ``slurm.jobs`` does not list but ``slurm.cancel_jobs`` finds (submitted after the plan was read)."""

    def activities(self) -> list[Callable[..., Any]]:
        made: list[Callable[..., Any]] = []
        made += [self._preflight(step) for step in PREFLIGHT]
        made += [self._plan(step) for step in PLAN]
        made += [self._apply(step) for step in (*APPLY, *SMOKE, VALIDATE)]
        made += [self._undo(step) for step in ROLLBACK]
        made.append(self._handover(HANDOVER))
        made.append(self._record(RECORD_TENANT))
        made.append(self._latest(LATEST_TENANT))
        made.append(self._read_tenants(READ_TENANT_RECORDS))
        made += [self._jobs(SLURM_JOBS), self._cancel_jobs(SLURM_CANCEL_JOBS)]
        made.append(tenant_holder)
        if self.gate_notifier:
            made.append(self._gate_notify(GATE_NOTIFY))
        return made

    async def _read(self, name: str) -> None:
        """A read-only step's call: recorded, failed while ``flaky`` says so, then held at its ``rendezvous``."""
        self.calls.append(name)
        if self.flaky.get(name, 0) > 0:
            self.flaky[name] -= 1
            raise ApplicationError(f"injected transient failure at {name}", type="Unavailable")
        barrier = self.rendezvous.get(name)
        if barrier is not None:
            try:
                await asyncio.wait_for(barrier.wait(), RENDEZVOUS_S)
            except (TimeoutError, asyncio.BrokenBarrierError):
                raise ApplicationError(
                    f"{name} ran alone: the steps sharing its rendezvous never ran with it", non_retryable=True
                ) from None

    def _preflight(self, step: Step[StepInput, StepResult]) -> Callable[[StepInput], Awaitable[StepResult]]:
        @activity.defn(name=step.name)
        async def preflight(inp: StepInput) -> StepResult:
            await self._read(step.name)
            findings = []
            if self.preflight_error and step is CAPACITY.preflight:
                findings.append(
                    Finding(check="capacity.nodes", ok=False, message=self.preflight_error, fix="free some nodes")
                )
            findings += [f for f in self.refusals if f.check.split(".")[0] == step.layer]
            facts = inp.facts.model_copy(update={"nodes": NODES}) if step is CAPACITY.preflight else inp.facts
            return StepResult(findings=findings, facts=facts)

        return preflight

    def _plan(self, step: Step[StepInput, list[PlanStep]]) -> Callable[[StepInput], Awaitable[list[PlanStep]]]:
        @activity.defn(name=step.name)
        async def plan(inp: StepInput) -> list[PlanStep]:
            await self._read(step.name)
            action = Action.unchanged if self.present else Action.create
            return [
                PlanStep(
                    layer=step.layer, kind=apply.kinds[0], name=f"{inp.contract.slug}-{apply.short}", action=action
                )
                for apply in APPLY
                if apply.layer == step.layer and apply.kinds
            ] + [p for p in self.appeared if p.layer == step.layer]

        return plan

    def _apply(self, step: Step[StepInput, StepResult]) -> Callable[[StepInput], Awaitable[StepResult]]:
        @activity.defn(name=step.name)
        async def apply(inp: StepInput) -> StepResult:
            self.calls.append(step.name)
            if self.fail_at == step.name:
                raise ApplicationError(f"injected failure at {step.name}", type="Invalid", non_retryable=True)
            while self.hang_at == step.name:
                activity.heartbeat()
                await asyncio.sleep(0.1)
            if self.smoke_errors.get(step.name, 0) > 0:
                self.smoke_errors[step.name] -= 1
                error = Finding.failed(step.name, f"injected error finding at {step.name}", SMOKE_FIX)
                return StepResult(findings=[error], facts=inp.facts)
            result = EnsureResult(
                layer=step.layer, kind="Thing", name=f"{inp.contract.slug}-{step.short}", outcome=Outcome.created
            )
            return StepResult(results=[result], facts=inp.facts)

        return apply

    def _undo(self, step: Step[UndoInput, list[EnsureResult]]) -> Callable[[UndoInput], Awaitable[list[EnsureResult]]]:
        @activity.defn(name=step.name)
        async def undo(inp: UndoInput) -> list[EnsureResult]:
            key = f"{step.name}:{inp.step}"
            self.calls.append(key)
            if self.undo_failures.get(key, 0) > 0:
                self.undo_failures[key] -= 1
                raise ApplicationError(f"injected undo failure at {key}", type="Forbidden", non_retryable=True)
            return [r.model_copy(update={"outcome": Outcome.deleted}) for r in inp.results]

        return undo

    def _jobs(self, step: Step[StepInput, list[PlanStep]]) -> Callable[[StepInput], Awaitable[list[PlanStep]]]:
        @activity.defn(name=step.name)
        async def jobs(inp: StepInput) -> list[PlanStep]:
            await self._read(step.name)
            return [PlanStep(layer="slurm", kind=JOB_KIND, name=job, action=Action.delete) for job in self.jobs]

        return jobs

    def _cancel_jobs(self, step: Step[JobsToCancel, StepResult]) -> Callable[[JobsToCancel], Awaitable[StepResult]]:
        @activity.defn(name=step.name)
        async def cancel(inp: JobsToCancel) -> StepResult:
            self.calls.append(f"{step.name}:{','.join(inp.planned)}")
            gone = [*self.jobs, *self.late_jobs]
            self.jobs, self.late_jobs = [], []
            return StepResult(
                results=[EnsureResult(layer="slurm", kind=JOB_KIND, name=job, outcome=Outcome.deleted) for job in gone],
                findings=[
                    Finding.failed("slurm.jobs_after_plan", f"job {job} was cancelled too", severity=Severity.warning)
                    for job in gone
                    if job not in inp.planned
                ],
            )

        return cancel

    def _handover(self, step: Step[StepInput, Handover]) -> Callable[[StepInput], Awaitable[Handover]]:
        @activity.defn(name=step.name)
        async def render(inp: StepInput) -> Handover:
            self.calls.append(step.name)
            return Handover(markdown=f"# {inp.contract.slug}\n", sheet={}, capacity_contract={})

        return render

    def _record(self, step: Step[TenantRecord, StoredRecord]) -> Callable[[TenantRecord], Awaitable[StoredRecord]]:
        @activity.defn(name=step.name)
        async def record(inp: TenantRecord) -> StoredRecord:
            self.calls.append(step.name)
            if self.fail_at == step.name:
                raise ApplicationError(f"injected failure at {step.name}", type="Forbidden", non_retryable=True)
            self.records.append(inp)
            version = len([r for r in self.records if r.contract.slug == inp.contract.slug])
            return StoredRecord(
                kind=RecordKind.tenant,
                name=f"tenantflow.tenant.{inp.contract.slug}.v{version}",
                namespace="tenantflow-system",
                version=version,
                status=inp.status,
                run=inp.run,
                created=True,
            )

        return record

    def _latest(self, step: Step[RecordKey, LatestContract]) -> Callable[[RecordKey], Awaitable[LatestContract]]:
        @activity.defn(name=step.name)
        async def latest(key: RecordKey) -> LatestContract:
            self.calls.append(step.name)
            if self.records_unreadable is not None:
                raise ApplicationError(self.records_unreadable, type="Forbidden", non_retryable=True)
            mine = [r for r in self.records if r.contract.slug == key.tenant]
            if not mine:
                return LatestContract()
            last = mine[-1]
            return LatestContract(contract=last.contract, recorded_by=last.run.workflow_id, status=last.status)

        return latest

    def _read_tenants(
        self, step: Step[RecordsQuery, list[RecordedTenant]]
    ) -> Callable[[RecordsQuery], Awaitable[list[RecordedTenant]]]:
        @activity.defn(name=step.name)
        async def read_tenants(query: RecordsQuery) -> list[RecordedTenant]:
            self.calls.append(step.name)
            latest: dict[str, RecordedTenant] = {}
            for record in self.records:
                slug = record.contract.slug
                if record.contract.cluster.context == query.records.context and query.slug in (None, slug):
                    latest[slug] = RecordedTenant(
                        version=latest[slug].version + 1 if slug in latest else 1, record=record
                    )
            return list(latest.values())

        return read_tenants

    def _gate_notify(self, step: Step[GateNotice, NoticeSent]) -> Callable[[GateNotice], Awaitable[NoticeSent]]:
        @activity.defn(name=step.name)
        async def notify(notice: GateNotice) -> NoticeSent:
            self.gate_notices.append(notice)
            return NoticeSent(delivered=True, status=200)

        return notify
