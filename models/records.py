"""Tenant and worker records: what a finished run applied, kept in the cluster after its Temporal history is gone.

Like Helm's release Secrets, every completed onboarding (enrollment) writes one
versioned, immutable Secret per tenant (enrolled worker) in the platform namespace
(``TENANTFLOW_RECORDS_NAMESPACE``, default ``tenantflow-system``) of the tenant's
cluster (of the worker cluster: on the Hub tenantflow is only an organization admin,
confined to the organization's namespace; ``worker reset`` leaves the record): named ``tenantflow.tenant.<slug>.v<N>``
(``tenantflow.worker.<namespace>.<worker>.v<N>``), labelled so ``kubectl get secrets
-l tenantflow.io/record=tenant`` lists them, the payload JSON gzipped and
base64-encoded under the data key ``record``, as Helm stores a release. The highest
version is the current one; ``offboard``, ``decommission`` and ``handover`` read it.
A completed offboarding (decommission) writes a last version with the status
``offboarded`` (``decommissioned``), as ``helm uninstall --keep-history`` does.
"""

from __future__ import annotations

import base64
import gzip
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from tenantflow.models.base import Strict
from tenantflow.models.contract_fields import SLUG_PATTERN
from tenantflow.models.enrollment_contract import DNS_LABEL, WorkerEnrollment
from tenantflow.models.enrollment_workflows import ObjectRef
from tenantflow.models.gates import Approval, approvals_excluded
from tenantflow.models.onboarding import Handover
from tenantflow.models.results import EnsureResult
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract

DEFAULT_NAMESPACE = "tenantflow-system"
SECRET_TYPE = "tenantflow.io/record.v1"
DATA_KEY = "record"
RECORD_LABEL = "tenantflow.io/record"
TENANT_LABEL = "tenantflow.io/tenant"
HUB_NAMESPACE_LABEL = "tenantflow.io/hub-namespace"
WORKERCLUSTER_LABEL = "tenantflow.io/worker"
VERSION_LABEL = "tenantflow.io/version"
STATUS_LABEL = "tenantflow.io/status"
RUN_ID_ANNOTATION = "tenantflow.io/run-id"


class RecordKind(StrEnum):
    tenant = "tenant"
    workercluster = "worker"


class RecordStatus(StrEnum):
    onboarded = "onboarded"
    offboarded = "offboarded"
    enrolled = "enrolled"
    decommissioned = "decommissioned"


class RunStamp(Strict):
    """Which run applied the contract, under which approved plan, and when."""

    workflow_id: str
    run_id: str = Field(..., min_length=1, description="Temporal run id: one run writes one version")
    plan_hash: str
    approver: str
    recorded_at: datetime
    approvals: list[Approval] = Field(
        default_factory=list,
        exclude_if=approvals_excluded,
        description="every gate answered: who, when, which plan hash (runs recorded with the approvals patch)",
    )


class TenantRecord(Strict):
    """A tenant as its onboarding left it: the contract applied and the handover sheet given."""

    contract: TenantContract
    run: RunStamp
    status: RecordStatus = RecordStatus.onboarded
    applied: list[EnsureResult] = Field(default_factory=list)
    handover: Handover | None = None


class WorkerClusterRecord(Strict):
    """An enrolled worker as its enrollment left it: the contract applied and what was installed and adopted."""

    contract: WorkerEnrollment
    run: RunStamp
    status: RecordStatus = RecordStatus.enrolled
    installed: list[EnsureResult] = Field(default_factory=list)
    adopted: list[ObjectRef] = Field(default_factory=list)


class RecordKey(Strict):
    """Which record: a tenant by slug, or a worker by Hub namespace and name; and the cluster that holds it."""

    kind: RecordKind
    target: KubeTarget
    tenant: str = ""
    hub_namespace: str = ""
    worker: str = ""

    @classmethod
    def of_tenant(cls, target: KubeTarget, slug: str) -> RecordKey:
        return cls(kind=RecordKind.tenant, target=target, tenant=slug)

    @classmethod
    def of_workercluster(cls, target: KubeTarget, hub_namespace: str, workercluster: str) -> RecordKey:
        return cls(kind=RecordKind.workercluster, target=target, hub_namespace=hub_namespace, worker=workercluster)

    @classmethod
    def of(cls, record: TenantRecord | WorkerClusterRecord) -> RecordKey:
        if isinstance(record, TenantRecord):
            return cls.of_tenant(record.contract.cluster, record.contract.slug)
        return cls.of_workercluster(
            record.contract.worker, record.contract.tenant_namespace, record.contract.worker_name
        )

    @property
    def stem(self) -> str:
        """The Secret name without its version: ``tenantflow.tenant.<slug>`` or ``tenantflow.worker.<ns>.<w>``."""
        if self.kind is RecordKind.tenant:
            return f"tenantflow.tenant.{self.tenant}"
        return f"tenantflow.worker.{self.hub_namespace}.{self.worker}"

    def secret_name(self, version: int) -> str:
        return f"{self.stem}.v{version}"

    @property
    def labels(self) -> dict[str, str]:
        """The labels every version of this record carries (the version label is added per Secret)."""
        if self.kind is RecordKind.tenant:
            return {RECORD_LABEL: self.kind.value, TENANT_LABEL: self.tenant}
        return {
            RECORD_LABEL: self.kind.value,
            HUB_NAMESPACE_LABEL: self.hub_namespace,
            WORKERCLUSTER_LABEL: self.worker,
        }

    @property
    def selector(self) -> str:
        return ",".join(f"{key}={value}" for key, value in sorted(self.labels.items()))


class LatestContract(Strict):
    """What ``records.latest_tenant`` read: the contract of the tenant's latest record and the run that wrote it."""

    contract: TenantContract | None = Field(None, description="None: the cluster holds no record of the tenant")
    recorded_by: str = Field("", description="the workflow id of the run that wrote that version")
    status: RecordStatus | None = None


class StoredRecord(Strict):
    """One version of a record as stored: where, which version, and what run wrote it."""

    kind: RecordKind
    name: str
    namespace: str
    version: int = Field(..., ge=1)
    status: RecordStatus
    run: RunStamp
    created: bool = Field(False, description="this call wrote it (False: a retry found it already written)")


def encode_payload(record: BaseModel) -> str:
    """The record as Helm encodes a release: JSON, gzipped, base64 (the Secret's data encodes it once more)."""
    return base64.b64encode(gzip.compress(record.model_dump_json().encode())).decode()


def decode_payload(encoded: str) -> bytes:
    """The JSON of a record from :func:`encode_payload`'s text."""
    return gzip.decompress(base64.b64decode(encoded))


RECORDS_WORKFLOW = "TenantRecords"
"""The workflow type of the read-only read of tenant records (``tenantflow tenants``, ``handover``, ``drift``,
``apply``, ``offboard``; the HTTP API's change and offboarding)."""
WORKER_RECORD_WORKFLOW = "WorkerClusterRecords"
"""The workflow type of the read-only read of an enrolled worker's record (``tenantflow decommission``)."""


class RecordsQuery(Strict):
    """Which tenant records ``TenantRecords`` reads: every tenant's in ``records`` (or only ``slug``'s)."""

    records: KubeTarget = Field(..., description="the cluster holding the tenant records, as the worker names it")
    slug: str | None = Field(
        None, pattern=SLUG_PATTERN, description="only this tenant's record (default: every tenant's)"
    )


class RecordedTenant(Strict):
    """A tenant's current record and its version."""

    version: int
    record: TenantRecord


class RecordsReport(Strict):
    """What ``TenantRecords`` read: the current record of each tenant, by slug."""

    tenants: list[RecordedTenant] = Field(default_factory=list)


class WorkerRecordQuery(Strict):
    """Which worker record ``WorkerClusterRecords`` reads: that of ``hub_namespace/worker`` in ``records``."""

    records: KubeTarget = Field(..., description="the worker cluster holding the record, as the worker names it")
    hub_namespace: str = Field(..., pattern=DNS_LABEL, description="the organization's namespace on the Hub")
    worker: str = Field(..., pattern=DNS_LABEL, description="the worker cluster's name in that namespace")

    @property
    def key(self) -> RecordKey:
        return RecordKey.of_workercluster(self.records, self.hub_namespace, self.worker)


class WorkerRecordReport(Strict):
    """What ``WorkerClusterRecords`` read: the worker's current record, None when the cluster holds none."""

    record: WorkerClusterRecord | None = None
