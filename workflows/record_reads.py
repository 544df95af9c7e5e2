"""``TenantRecords`` and ``WorkerClusterRecords``: current records, read on the worker (``tenantflow tenants``,
``handover``, ``apply``, ``offboard``, ``decommission`` and ``drift``'s check that a tenant is onboarded; the HTTP
API's ``GET /tenants`` and ``/tenants/{slug}/...``, its change and its offboarding).

Each runs one local activity (``records.read_tenants``, ``records.read_worker``) that reads the records in the
cluster the query names, as the worker's cluster registry reaches it, with the worker's credentials: the CLI and
the API need only Temporal access. They write nothing and have no gate. A read that keeps failing fails the run
with the step's error, named by the step.
"""

from __future__ import annotations

from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.records import (
        RECORDS_WORKFLOW,
        WORKER_RECORD_WORKFLOW,
        RecordsQuery,
        RecordsReport,
        WorkerRecordQuery,
        WorkerRecordReport,
    )
    from tenantflow.models.runbook import READ_TENANT_RECORDS, READ_WORKER_RECORD
    from tenantflow.models.step import Step
    from tenantflow.models.targets import KubeTarget

from tenantflow.workflows.drift import READ_RETRY
from tenantflow.workflows.steps import execute_local

Q = TypeVar("Q")
R = TypeVar("R")


async def read_once(step: Step[Q, R], query: Q, cluster: KubeTarget) -> R:
    """``step`` as a local activity, retried as a read is; its failure as the run's, named by the step."""
    try:
        return await execute_local(step, query, retry_policy=READ_RETRY, summary=f"{step.name} [{cluster.describe()}]")
    except ApplicationError as cause:  # a local activity's failure reaches the workflow as its own error
        raise ApplicationError(
            f"{step.name}: {cause.message}", *cause.details, type=cause.type, non_retryable=True
        ) from None


@workflow.defn(name=RECORDS_WORKFLOW)
class TenantRecords:
    @workflow.run
    async def run(self, query: RecordsQuery) -> RecordsReport:
        return RecordsReport(tenants=await read_once(READ_TENANT_RECORDS, query, query.records))


@workflow.defn(name=WORKER_RECORD_WORKFLOW)
class WorkerClusterRecords:
    @workflow.run
    async def run(self, query: WorkerRecordQuery) -> WorkerRecordReport:
        return await read_once(READ_WORKER_RECORD, query, query.records)
