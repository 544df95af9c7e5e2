"""The bodies of the HTTP API (``tenantflow serve-api``) that are its own: requests that are not a contract or a
gate payload as such, and the answers. The document at ``GET /openapi.json`` is generated from these models and
the ones they name (:mod:`starter.openapi`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tenantflow.models.base import Strict
from tenantflow.models.contract_fields import SLUG_PATTERN
from tenantflow.models.enrollment_contract import DNS_LABEL, WorkerEnrollment
from tenantflow.models.enrollment_workflows import DecommissionResult, EnrollmentResult
from tenantflow.models.failure import RunFailure
from tenantflow.models.lifecycle import LifecycleResult
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.preview import PlanReport
from tenantflow.models.records import RecordedTenant, RecordStatus
from tenantflow.models.tenant import TenantContract

TOKEN_USER = "omit it (or null): the token's user; any other name is refused (403)"
"""What every gate body says of its ``approver``: who answers is who the token authenticates."""


class Problem(Strict):
    """Every 4xx and 5xx answer: what is wrong and how to fix it, and the fields it is about."""

    error: str = Field(..., min_length=1, description="the problem and its fix, naming each field concerned")
    fields: list[str] = Field(
        default_factory=list, description="the dotted path of each field of the body, path or query concerned"
    )


class PlanPreview(PlanReport):
    """A contract's read-only plan (``POST /plans``, ``tenantflow plan -o json``): the report, its hash and whether
    preflight passed."""

    plan_hash: str | None = Field(None, description="the hash `approve_plan` would need; none when preflight failed")
    ok: bool = Field(..., description="no preflight finding blocks the onboarding")

    @classmethod
    def of(cls, report: PlanReport) -> PlanPreview:
        return cls(**dict(report), plan_hash=report.plan.plan_hash if report.plan else None, ok=not report.errors)


class StartedRun(Strict):
    """A run started: how to address it (``GET /runs/{workflow_id}``)."""

    workflow_id: str
    run_id: str | None


class GateAnswered(Strict):
    workflow_id: str
    gate: str
    answer: str = Field(..., description="the run's own line, e.g. `plan 0123456789abcdef approved by bob`")


class CancelRequested(Strict):
    workflow_id: str
    answer: str


class RunResult(Strict):
    """How a run ended: its result, or why it did not complete."""

    workflow_id: str
    workflow_type: str
    status: str = Field(..., description="Temporal's execution status: COMPLETED, FAILED, CANCELED, TERMINATED, ...")
    result: OnboardingResult | OffboardingResult | EnrollmentResult | DecommissionResult | LifecycleResult | None = (
        Field(None, description="the run's result (COMPLETED only); an onboarding's includes its handover sheet")
    )
    failure: str | None = Field(None, description="why the run did not complete: each cause, outermost first")
    explanation: RunFailure | None = Field(
        None, description="why the run did not complete: the failing step, the error, its fix, what the rollback did"
    )


class RunSummary(Strict):
    """One run of ``GET /runs``."""

    id: str
    type: str
    status: str
    stage: str
    started: datetime
    closed: datetime | None


class Params(BaseModel):
    """Path and query parameters: closed like :class:`Strict`, but taken as sent (a workflow id may hold spaces)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunsQuery(Params):
    """The filters of ``GET /runs`` (the search attributes every run carries)."""

    tenant: str | None = Field(None, pattern=SLUG_PATTERN, max_length=32, description="tenant slug")
    worker: str | None = Field(None, pattern=DNS_LABEL, description="worker cluster name")
    stage: str | None = Field(None, pattern=r"^[a-z_]+(:[a-z_.]+)?$", description="stage, e.g. gate:approve_plan")
    running: bool = Field(False, description="only runs still in progress")
    limit: int = Field(100, ge=1, le=1000)


CLUSTER = "the cluster holding the tenant records, as the worker's cluster registry names it"


class ClusterQuery(Params):
    """``GET /tenants``: the cluster whose tenant records to read."""

    cluster: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$", max_length=253, description=CLUSTER)


class TenantClusterQuery(Params):
    """The cluster holding one tenant's record; default: the cluster of the tenant's latest onboarding run."""

    cluster: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$", max_length=253, description=CLUSTER)


class TenantSummary(Strict):
    """One tenant's current record, as ``tenantflow tenants`` lists it (its term: ``GET /tenants/{slug}/term``)."""

    slug: str
    status: RecordStatus
    version: int
    plan_hash: str
    approver: str
    recorded_at: datetime
    run_id: str

    @classmethod
    def of(cls, recorded: RecordedTenant) -> TenantSummary:
        record = recorded.record
        return cls(
            slug=record.contract.slug,
            status=record.status,
            version=recorded.version,
            plan_hash=record.run.plan_hash,
            approver=record.run.approver,
            recorded_at=record.run.recorded_at,
            run_id=record.run.run_id,
        )


class TenantPath(Params):
    slug: str = Field(..., pattern=SLUG_PATTERN, max_length=32, description="the tenant's slug (tenant-<name>)")


class WorkerPath(Params):
    namespace: str = Field(..., pattern=DNS_LABEL, description="the organization's namespace on the Hub")
    worker: str = Field(..., pattern=DNS_LABEL, description="the worker cluster's name in that namespace")


class RunPath(Params):
    id: str = Field(
        ...,
        min_length=1,
        description="the run's workflow id, e.g. tenant/tenant-foo; its slashes go as they are or as %2F",
    )


class OffboardRequest(Strict):
    """``POST /tenants/{slug}/offboarding``: the teardown of a finished tenant, gated like its onboarding."""

    purge_data: bool = Field(False, description="also delete the Weka org and filesystems (asks confirm_purge)")
    contract: TenantContract | None = Field(
        None, description="default: the tenant's record in its cluster, else the input of its latest onboarding run"
    )


class DecommissionRequest(Strict):
    """``POST /workerclusters/{namespace}/{worker}/decommission``: cordon, drain, Hub removal, a gated reset."""

    contract: WorkerEnrollment | None = Field(
        None, description="default: the input of the worker cluster's latest enrollment run"
    )
