"""``records.tenant`` and ``records.worker``: the last step of a run stores its record.

The versioned store behind them is :mod:`activities.common.recordstore`.
"""

from __future__ import annotations

from tenantflow.activities.common.recordstore import store
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.models import runbook
from tenantflow.models.records import StoredRecord, TenantRecord, WorkerRecord


@defn(runbook.RECORD_TENANT)
def record_tenant(record: TenantRecord) -> StoredRecord:
    """Store the onboarded tenant's record in its cluster."""
    return store(record, settings().records_namespace)


@defn(runbook.RECORD_WORKER)
def record_worker(record: WorkerRecord) -> StoredRecord:
    """Store the enrolled worker's record in the worker cluster."""
    return store(record, settings().records_namespace)


ACTIVITIES = [record_tenant, record_worker]
