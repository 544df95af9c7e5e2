"""``records.tenant`` and ``records.worker``: the last step of a run stores its record; ``records.latest_tenant``
reads a tenant's latest record (an expiring lifecycle offboards its contract); ``records.read_tenants`` reads the
tenants' current records for ``TenantRecords`` (``tenantflow tenants``, ``handover``, ``drift``, ``apply``,
``offboard``); ``records.read_worker`` an enrolled worker's for ``WorkerClusterRecords`` (``decommission``).

The versioned store behind them is :mod:`activities.common.recordstore`.
"""

from __future__ import annotations

from tenantflow.activities.common.recordstore import list_records, read_latest, store
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.models import enrollment_steps, runbook
from tenantflow.models.records import (
    LatestContract,
    RecordedTenant,
    RecordKey,
    RecordKind,
    RecordsQuery,
    StoredRecord,
    TenantRecord,
    WorkerClusterRecord,
    WorkerRecordQuery,
    WorkerRecordReport,
)


@defn(runbook.RECORD_TENANT)
def record_tenant(record: TenantRecord) -> StoredRecord:
    """Store the onboarded tenant's record in its cluster."""
    return store(record, settings().records_namespace)


@defn(enrollment_steps.RECORD_WORKERCLUSTER)
def record_worker(record: WorkerClusterRecord) -> StoredRecord:
    """Store the enrolled worker's record in the worker cluster."""
    return store(record, settings().records_namespace)


@defn(runbook.LATEST_TENANT)
def latest_tenant(key: RecordKey) -> LatestContract:
    """The contract of the tenant's latest record (the last onboarding or change that completed), read only."""
    record = read_latest(key, TenantRecord, settings().records_namespace)
    if record is None:
        return LatestContract()
    return LatestContract(contract=record.contract, recorded_by=record.run.workflow_id, status=record.status)


@defn(runbook.READ_TENANT_RECORDS)
def read_tenants(query: RecordsQuery) -> list[RecordedTenant]:
    """The current record of every tenant in ``query.records`` (only ``query.slug``'s when given), by slug."""
    return [
        RecordedTenant(version=version, record=record)
        for version, record in list_records(query.records, RecordKind.tenant, settings().records_namespace)
        if isinstance(record, TenantRecord) and query.slug in (None, record.contract.slug)
    ]


@defn(runbook.READ_WORKER_RECORD)
def read_worker(query: WorkerRecordQuery) -> WorkerRecordReport:
    """The current record of the enrolled worker ``query`` names, in the worker cluster it names."""
    return WorkerRecordReport(record=read_latest(query.key, WorkerClusterRecord, settings().records_namespace))


ACTIVITIES = [record_tenant, record_worker, latest_tenant, read_tenants, read_worker]
