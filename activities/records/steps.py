"""``records.tenant`` and ``records.worker``: the last step of a run stores its record; ``records.latest_tenant``
reads a tenant's latest record (an expiring lifecycle offboards its contract).

The versioned store behind them is :mod:`activities.common.recordstore`.
"""

from __future__ import annotations

from tenantflow.activities.common.recordstore import read_latest, store
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.models import runbook
from tenantflow.models.records import LatestContract, RecordKey, StoredRecord, TenantRecord, WorkerClusterRecord


@defn(runbook.RECORD_TENANT)
def record_tenant(record: TenantRecord) -> StoredRecord:
    """Store the onboarded tenant's record in its cluster."""
    return store(record, settings().records_namespace)


@defn(runbook.RECORD_WORKERCLUSTER)
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


ACTIVITIES = [record_tenant, record_worker, latest_tenant]
