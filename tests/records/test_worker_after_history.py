"""An enrolled worker outlives its enrollment's history: ``decommission NS W`` works from the worker's record, which
the worker reads (``WorkerClusterRecords``): the CLI runs with only the Temporal settings, no kubeconfig."""

from __future__ import annotations

import asyncio
import json

from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.recordstore import read_latest
from tenantflow.models.enrollment_workflows import DecommissionResult, EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan
from tenantflow.models.records import DEFAULT_NAMESPACE, RecordKey, RecordStatus, WorkerClusterRecord
from tenantflow.models.run_ids import enrollment_id
from tenantflow.starter.client import TenantflowClient
from tests.enrollment.conftest import Lab, enrollment_worker, wait_stage
from tests.records.test_after_history import delete_history
from tests.starter.conftest import CLI, only_temporal_env


async def test_decommission_works_from_the_record_once_the_history_is_deleted(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    contract = greenfield.contract()
    key = RecordKey.of_workercluster(contract.worker, contract.tenant_namespace, contract.worker_name)
    async with enrollment_worker(dev_env) as (client, queue):
        api = TenantflowClient(client, queue)
        workflow_id = enrollment_id(contract.tenant_namespace, contract.worker_name)
        handle = await client.start_workflow(
            "WorkerEnrollment",
            EnrollmentInput(contract=contract, condition_budget_s=20),
            id=workflow_id,
            task_queue=queue,
            result_type=EnrollmentResult,
        )
        status = await wait_stage(handle, "gate:approve_plan")
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or "", approver="fay"))
        enrolled = await handle.result()
        assert enrolled.status == "completed"
        record = read_latest(key, WorkerClusterRecord, DEFAULT_NAMESPACE)
        assert record is not None and record.status is RecordStatus.enrolled
        assert (record.contract, record.run.approver, record.installed) == (contract, "fay", enrolled.installed)
        assert not greenfield.hub.list("", "namespaces", label_selector="app.kubernetes.io/managed-by=tenantflow"), (
            "on the Hub tenantflow is an organization admin: the record is in the worker cluster"
        )

        await delete_history(api, workflow_id)
        greenfield.worker.delete("apps", "deployments", "trainy-worker-agent", "trainy-system")
        proc = await asyncio.create_subprocess_exec(
            CLI,
            *("decommission", contract.tenant_namespace, contract.worker_name, "--context", "worker", "-o", "json"),
            env=only_temporal_env(api),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()
        dec = api.handle(json.loads(out)["workflow_id"])
        status = await wait_stage(dec, "gate:approve_plan")
        await dec.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or "", approver="gus"))
        assert (await api.result(dec.id, DecommissionResult)).status == "completed"
    last = read_latest(key, WorkerClusterRecord, DEFAULT_NAMESPACE)
    assert last is not None and last.status is RecordStatus.decommissioned and last.run.approver == "gus"
    assert not greenfield.hub.list("trainy.ai", "workerclusters", "forecasting")
