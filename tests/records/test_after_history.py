"""A tenant outlives its onboarding's history: onboard against the lab, delete the history, then the CLI's
``handover``, ``offboard`` and ``tenants`` work from the record in the tenant's cluster (``tenants`` with the term
its lifecycle kept, ended by the offboarding). The tenant's users are
its own: offboarding keeps (deactivated) users, and the session's lab is shared."""

from __future__ import annotations

import asyncio

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.recordstore import read_latest
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.lifecycle import LifecycleResult
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.records import RecordKey, RecordStatus, TenantRecord
from tenantflow.models.run_ids import lifecycle_id, onboarding_id
from tenantflow.starter.client import TenantflowClient
from tests.approvers import REVIEWER, reviewer
from tests.integration.runs import onboard
from tests.integration.test_offboarding_e2e import small_tenant
from tests.labfixture import lab_env, lab_worker
from tests.starter.conftest import tenantflow, tenantflow_json
from tests.workflows.harness import wait_for_stage

CONTEXT = ("--context", "tenant-cluster")


async def delete_history(api: TenantflowClient, workflow_id: str) -> None:
    """Delete the latest run of ``workflow_id`` and wait until the server no longer knows it (the server deletes in
    the background: an enrollment's history took up to a minute on the dev server)."""
    await api.client.workflow_service.delete_workflow_execution(
        DeleteWorkflowExecutionRequest(
            namespace=api.client.namespace, workflow_execution=WorkflowExecution(workflow_id=workflow_id)
        )
    )
    deadline = asyncio.get_running_loop().time() + 120
    while asyncio.get_running_loop().time() < deadline:
        try:
            await api.handle(workflow_id).describe()
        except RPCError as gone:
            assert gone.status == RPCStatusCode.NOT_FOUND
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{workflow_id} is still there")


async def test_offboarding_works_from_the_record_once_the_history_is_deleted(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    off = small_tenant(lab)
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@tenant-kept.example"})
        for u, name in zip(off.users, ("kira", "lars"), strict=True)
    ]
    contract = off.model_copy(
        update={
            "slug": "tenant-kept",
            "display_name": "Tenant Kept",
            "users": users,
            "slurm": off.slurm.model_copy(update={"team_account": "ml-team-kept"}),
        }
    )
    key = RecordKey.of_tenant(contract.cluster, contract.slug)
    async with lab_worker(dev_env.client, lab) as api:
        onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message
        record = read_latest(key, TenantRecord)
        assert record is not None and record.status is RecordStatus.onboarded
        assert (record.contract, record.run.plan_hash, record.run.approver) == (
            contract,
            onboarded.plan_hash,
            REVIEWER,
        )

        assert onboarded.handover is not None and record.handover == onboarded.handover

        await delete_history(api, onboarding_id(contract.slug))
        handover = await tenantflow_json(api, "handover", contract.slug, *CONTEXT, "--kubeconfig", str(lab.kubeconfig))
        assert handover["handover"]["markdown"] == onboarded.handover.markdown

        started = await tenantflow_json(api, "offboard", contract.slug, *CONTEXT, "--kubeconfig", str(lab.kubeconfig))
        handle = api.handle(started["workflow_id"])
        status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=60)
        assert status.plan_hash and status.plan and status.plan.writes(), "the teardown found the tenant"
        await reviewer(api).approve(handle.id, status.plan_hash)
        offboarded: OffboardingResult = await api.result(handle.id, OffboardingResult)
        assert offboarded.status == "completed"
        await wait_for_stage(api, api.handle(lifecycle_id(contract.slug)), "term:offboarded", timeout_s=60)
        ended = await asyncio.wait_for(api.result(lifecycle_id(contract.slug), LifecycleResult), 60)
        assert ended.status == "offboarded", "the lifecycle has ended before the worker stops"
        # the worker reads the records for `tenants` and `handover`
        [listed] = [
            row
            for row in await tenantflow_json(api, "tenants", *CONTEXT, "--kubeconfig", str(lab.kubeconfig))
            if row["slug"] == contract.slug
        ]
        assert (listed["status"], listed["version"], listed["approver"]) == ("offboarded", 2, REVIEWER)
        assert listed["term_end"].endswith(" (offboarded)"), "the completed offboarding ended the tenant's term"
        code, _, err = await tenantflow(api, "handover", contract.slug, *CONTEXT, "--kubeconfig", str(lab.kubeconfig))
        assert code == 4 and "offboarded" in err

    with lab_env(lab):  # this process reads the record with the lab's cluster registry
        last = read_latest(key, TenantRecord)
    assert last is not None and last.status is RecordStatus.offboarded and last.run.approver == REVIEWER
