"""``TenantRecords``: the tenants' current records, read on the worker (``tenantflow tenants``, ``handover``, and
``drift``'s check that a tenant is onboarded; the HTTP API's ``GET /tenants`` and ``/tenants/{slug}/...``).

One local activity (``records.read_tenants``) reads the records in the cluster the query names, as the worker's
cluster registry reaches it, with the worker's credentials: the CLI and the API need only Temporal access. It
writes nothing and has no gate. A read that keeps failing fails the run with the step's error, named by the step.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.records import RECORDS_WORKFLOW, RecordsQuery, RecordsReport
    from tenantflow.models.runbook import READ_TENANT_RECORDS

from tenantflow.workflows.drift import READ_RETRY
from tenantflow.workflows.steps import execute_local


@workflow.defn(name=RECORDS_WORKFLOW)
class TenantRecords:
    @workflow.run
    async def run(self, query: RecordsQuery) -> RecordsReport:
        step = READ_TENANT_RECORDS
        try:
            found = await execute_local(
                step, query, retry_policy=READ_RETRY, summary=f"{step.name} [{query.records.describe()}]"
            )
        except ApplicationError as cause:  # a local activity's failure reaches the workflow as its own error
            raise ApplicationError(
                f"{step.name}: {cause.message}", *cause.details, type=cause.type, non_retryable=True
            ) from None
        return RecordsReport(tenants=found)
