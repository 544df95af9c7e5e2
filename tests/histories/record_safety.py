"""Record the histories of the failure and teardown paths for the replay tests, once.

Offboarding with a confirmed purge, a cancel mid-apply, a re-opened approval, a
failed rollback resumed at ``retry_rollback`` and one left to expire, enrollment
compensation that goes past a failing step, a cancelled enrollment, an expired
``resume_submissions`` and a gated decommission. Run ``python -m
tests.histories.record_safety`` (as root, for the in-process kube emulators) only
for a new path; commit the JSON files it writes beside this file and never record
them again.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import DecommissionInput, DecommissionResult
from tenantflow.models.gates import GateAnswer
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.plan import Action, PlanStep
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.offboarding import offboarding_id
from tests.enrollment.conftest import Lab, enrollment_worker, start_lab, wait_stage
from tests.enrollment.test_failure_paths import brownfield_until
from tests.histories.record_more import save
from tests.temporal_env import start_dev_server, start_time_skipping
from tests.workflow.contract import example_tenant
from tests.workflow.fakes import FakeWorld
from tests.workflow.harness import fake_worker, wait_for_stage

Env = Callable[[], Awaitable[WorkflowEnvironment]]


async def onboarding(name: str, world: FakeWorld, env: Env = start_dev_server, **options: Any) -> None:
    """Record ``onboarding-<name>``: approve the plan, then drive the run as ``world`` and ``name`` say."""
    server = await env()
    try:
        async with fake_worker(server, world) as api:
            handle = await api.start_onboarding(example_tenant(f"tenant-{name}"), **options)
            status = await wait_for_stage(api, handle, "gate:approve_plan")
            if name == "replanned":
                world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.adopt)]
            await api.approve(handle.id, status.plan_hash or "")
            await finish_onboarding(name, api, handle, status.plan_hash)
            await save(handle, f"onboarding-{name}")
    finally:
        await server.shutdown()


async def finish_onboarding(name: str, api: TenantflowClient, handle: WorkflowHandle[Any, Any],
                            first_hash: str | None) -> None:
    if name == "cancelled":
        await wait_for_stage(api, handle, "apply:kube.quota")
        await handle.cancel()
    elif name == "replanned":
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        while status.plan_hash == first_hash:
            status = await wait_for_stage(api, handle, "gate:approve_plan")
        await api.approve(handle.id, status.plan_hash or "")
    elif name == "rollback-retried":
        await wait_for_stage(api, handle, "gate:retry_rollback")
        await handle.execute_update("retry_rollback", GateAnswer(approver="ops"))


async def offboarding_purged() -> None:
    server = await start_dev_server()
    contract = example_tenant("tenant-offboarded")
    try:
        async with fake_worker(server, FakeWorld(present=True)) as api:
            handle = await server.client.start_workflow(
                "TenantOffboarding", OffboardingInput(contract=contract, purge_data=True),
                id=offboarding_id(contract.slug), task_queue=api.task_queue, result_type=OffboardingResult)
            status = await wait_for_stage(api, handle, "gate:approve_plan")
            await api.approve(handle.id, status.plan_hash or "")
            await wait_for_stage(api, handle, "gate:confirm_purge")
            await handle.execute_update("confirm_purge", GateAnswer(approver="ops"))
            await save(handle, "offboarding-purged")
    finally:
        await server.shutdown()


async def with_lab(name: str, brownfield: bool, env: Env,
                   drive: Callable[[Client, str, Lab], Awaitable[WorkflowHandle[Any, Any]]]) -> None:
    server = await env()
    with tempfile.TemporaryDirectory() as tmp:
        labs = start_lab(Path(tmp), brownfield=brownfield)
        lab = next(labs)
        try:
            async with enrollment_worker(server) as (client, queue):
                await save(await drive(client, queue, lab), name)
        finally:
            next(labs, None)
            await server.shutdown()


async def compensation(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    lab.fault("worker", [
        {"path": r"/namespaces/trainy-system/deployments$", "methods": ["POST"], "error_rate": 1.0,
         "error_status": 422},
        {"path": r"/namespaces/trainy-system$", "methods": ["DELETE"], "error_rate": 1.0, "error_status": 403}])
    handle = await client.start_workflow("WorkerEnrollment", {"contract": lab.contract().model_dump(mode="json"),
                                                              "condition_budget_s": 5},
                                         id="enroll/forecasting/forecasting-us", task_queue=queue)
    status = await wait_stage(handle, "gate:approve_plan")
    await handle.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    return handle


async def cancelled(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    handle = await brownfield_until(client, queue, lab, ("submissions_paused",), "approve_adoption")
    await handle.cancel()
    return handle


async def resume_expired(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    return await brownfield_until(client, queue, lab, ("submissions_paused", "approve_adoption", "uncordon"),
                                  "resume_submissions")


async def decommission(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    enroll = await client.start_workflow("WorkerEnrollment", {"contract": lab.contract().model_dump(mode="json"),
                                                              "condition_budget_s": 20},
                                         id="enroll/forecasting/forecasting-us", task_queue=queue)
    status = await wait_stage(enroll, "gate:approve_plan")
    await enroll.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    await enroll.result()
    dec = await client.start_workflow("WorkerDecommission", DecommissionInput(contract=lab.contract()),
                                      id="decommission/forecasting/forecasting-us", task_queue=queue,
                                      result_type=DecommissionResult)
    status = await wait_stage(dec, "gate:approve_plan")
    await dec.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    return dec


async def main() -> None:
    await onboarding("cancelled", FakeWorld(hang_at="kube.quota"))
    await onboarding("replanned", FakeWorld())
    await onboarding("rollback-retried", FakeWorld(fail_at="storage.quotas", undo_failures={"slurm.undo:accounts": 1}))
    await onboarding("rollback-incomplete", FakeWorld(fail_at="kube.rbac", undo_failures={"kube.undo:namespace": 99}),
                     start_time_skipping, approval_escalate_after_s=3600, approval_expire_after_s=2 * 24 * 3600)
    await offboarding_purged()
    await with_lab("enrollment-compensation-incomplete", False, start_dev_server, compensation)
    await with_lab("enrollment-cancelled", True, start_dev_server, cancelled)
    await with_lab("enrollment-resume-expired", True, start_time_skipping, resume_expired)
    await with_lab("decommission-gated", False, start_dev_server, decommission)


if __name__ == "__main__":
    asyncio.run(main())
