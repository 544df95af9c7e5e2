"""Record the histories of the failure and teardown paths for the replay tests, once.

Offboarding with a confirmed purge, a cancel mid-apply, a re-opened approval, the re-plan's preflight (a run
completed through it, and one it refused), an onboarding that adopts an existing account, a failed smoke check
re-run at ``smoke_failed``, a failed rollback resumed at ``retry_rollback`` and one left to expire, a plan gate
that notified (local activities) when it opened, escalated and neared its expiry, an offboarding that cancelled
the tenant's Slurm jobs first, an offboarding and an enrollment whose plan changed after approval, enrollment
compensation that goes past a failing step (left incomplete, and resumed at ``retry_rollback``), a cancelled
enrollment, an expired ``resume_submissions``, a gated decommission (before and after its plan named the Hub) and
one whose reset dry run changed after approval, a greenfield enrollment as one started today runs it, and one
whose bootstrap plan (the stand-in's second dialect) waited at ``approve_plan``; the read-only ``TenantPlan`` of a
contract, one that plans and one its preflight stops;
the read-only ``TenantRecords`` of a cluster's tenant records and ``WorkerClusterRecords`` of an enrolled worker's
record.
Run ``python -m tests.histories.record_safety NAME...`` (as root, for the
in-process kube emulators) only for a new path; commit the JSON files it writes
beside this file and never record them again.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.recordstore import store
from tenantflow.lab.konduktor.cli import DIALECT_ENV
from tenantflow.models.enrollment_workflows import DecommissionInput, DecommissionResult
from tenantflow.models.gates import GateAnswer, SmokeFailedAnswer
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.preview import PlanInput
from tenantflow.models.records import (
    DEFAULT_NAMESPACE,
    RecordsQuery,
    RunStamp,
    TenantRecord,
    WorkerClusterRecord,
    WorkerRecordQuery,
)
from tenantflow.models.results import Finding
from tenantflow.models.run_ids import enrollment_id, offboarding_id, onboarding_id, plan_id, records_read_id
from tenantflow.models.status import RunStatus
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows.plan import TenantPlan
from tenantflow.workflows.record_reads import TenantRecords, WorkerClusterRecords
from tests.enrollment.conftest import Lab, enrollment_worker, start_lab, wait_stage
from tests.enrollment.test_decommission_approved import LATE
from tests.enrollment.test_failure_paths import brownfield_until
from tests.histories.record_more import save
from tests.temporal_env import start_dev_server, start_time_skipping
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage, waiting_on_a_timer

Env = Callable[[], Awaitable[WorkflowEnvironment]]


ADOPTION = PlanStep(
    layer="identity",
    kind="User",
    name="zara",
    action=Action.adopt,
    detail={"proof": "none: approving this plan overwrites the values below", "email": "zara@x.example -> zara@y"},
)
"""An approved adoption of an existing account: ``identity.users`` is given it (``adoptions-checked-at-write``)."""


async def onboarding(name: str, world: FakeWorld, env: Env = start_dev_server, **options: Any) -> None:
    """Record ``onboarding-<name>``: approve the plan, then drive the run as ``world`` and ``name`` say."""
    server = await env()
    try:
        async with fake_worker(server, world) as api:
            handle = await api.start_onboarding(example_tenant(f"tenant-{name}"), **options)
            status = await wait_for_stage(api, handle, "gate:approve_plan")
            if name.endswith("replanned"):
                world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.adopt)]
            if name == "replan-refused":  # someone else's account appeared: the re-plan's preflight refuses it
                world.appeared = [PlanStep(layer="identity", kind="User", name="zara", action=Action.adopt)]
                world.refusals = [Finding.failed("identity.username", "username zara is already an account", "rename")]
            await api.approve(handle.id, status.plan_hash or "")
            await after_approval(name, api, handle, status.plan_hash)
            await save(handle, f"onboarding-{name}")
    finally:
        await server.shutdown()


async def gate_notified() -> None:
    """Record ``onboarding-gate-notified-local``: the plan gate notifies when it opens, escalates (after 1 h) and nears
    its expiry (2 days; the time skipped), and is approved after that."""
    server = await start_time_skipping()
    try:
        async with fake_worker(server, FakeWorld()) as api:
            handle = await api.start_onboarding(
                example_tenant("tenant-gate-notified"),
                approval_escalate_after_s=3600,
                approval_expire_after_s=2 * 86400,
            )
            await wait_for_stage(api, handle, "gate:approve_plan")
            await waiting_on_a_timer(handle)
            await server.sleep(timedelta(hours=30))
            status = await wait_for_stage(api, handle, "gate:approve_plan-escalated")
            await api.approve(handle.id, status.plan_hash or "")
            await save(handle, "onboarding-gate-notified-local")
    finally:
        await server.shutdown()


async def after_approval(
    name: str, api: TenantflowClient, handle: WorkflowHandle[Any, Any], first_hash: str | None
) -> None:
    if name == "cancelled":
        await wait_for_stage(api, handle, "apply:kube.quota")
        await handle.cancel()
    elif name.endswith("replanned"):
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        while status.plan_hash == first_hash:
            status = await wait_for_stage(api, handle, "gate:approve_plan")
        await api.approve(handle.id, status.plan_hash or "")
    elif name == "rollback-retried":
        await wait_for_stage(api, handle, "gate:retry_rollback")
        await handle.execute_update("retry_rollback", GateAnswer(approver="ops"))
    elif name == "smoke-rerun":
        await wait_for_stage(api, handle, "gate:smoke_failed")
        await handle.execute_update("smoke_failed", SmokeFailedAnswer(approver="ops", choice="rerun"))


async def offboarding(name: str, world: FakeWorld, purge: bool, slug: str) -> None:
    """Record ``offboarding-<name>``; ``replanned``: an object appears between approval and teardown;
    ``cancels-jobs``: the tenant's jobs are planned and cancelled first, one submitted after the plan among them."""
    server = await start_dev_server()
    contract = example_tenant(slug)
    try:
        async with fake_worker(server, world) as api:
            handle = await server.client.start_workflow(
                "TenantOffboarding",
                OffboardingInput(contract=contract, purge_data=purge),
                id=offboarding_id(contract.slug),
                task_queue=api.task_queue,
                result_type=OffboardingResult,
            )
            status = await wait_for_stage(api, handle, "gate:approve_plan")
            if name == "replanned":
                world.appeared = [PlanStep(layer="kube", kind="Namespace", name="tenant-x", action=Action.unchanged)]
            await api.approve(handle.id, status.plan_hash or "")
            if purge:
                await wait_for_stage(api, handle, "gate:confirm_purge")
                await handle.execute_update("confirm_purge", GateAnswer(approver="ops"))
            if name == "replanned":
                await after_approval(name, api, handle, status.plan_hash)
            await save(handle, f"offboarding-{name}")
    finally:
        await server.shutdown()


async def plan(name: str, world: FakeWorld) -> None:
    """Record ``plan-<name>``: the read-only plan of a contract, started as ``tenantflow plan`` starts it."""
    server = await start_dev_server()
    contract = example_tenant(f"tenant-{name}")
    try:
        async with fake_worker(server, world) as api:
            handle = await server.client.start_workflow(
                TenantPlan.run,
                PlanInput(contract=contract),
                id=plan_id(contract.slug, "recorded"),
                task_queue=api.task_queue,
            )
            await save(handle, f"plan-{name}")
    finally:
        await server.shutdown()


async def records(name: str, world: FakeWorld) -> None:
    """Record ``records-<name>``: the tenant records of a cluster, read as ``tenantflow tenants`` reads them."""
    server = await start_dev_server()
    contract = example_tenant("tenant-recorded")
    stamp = RunStamp(
        workflow_id=onboarding_id(contract.slug),
        run_id="recorded",
        plan_hash="0123456789abcdef",
        approver="recorder",
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    world.records.append(TenantRecord(contract=contract, run=stamp))
    try:
        async with fake_worker(server, world) as api:
            handle = await server.client.start_workflow(
                TenantRecords.run,
                RecordsQuery(records=contract.cluster),
                id=records_read_id("recorded"),
                task_queue=api.task_queue,
            )
            await save(handle, f"records-{name}")
    finally:
        await server.shutdown()


async def worker_record(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    """An enrolled worker's record in the lab's worker cluster, read as ``tenantflow decommission`` reads it."""
    contract = lab.contract()
    stamp = RunStamp(
        workflow_id=enrollment_id(contract.tenant_namespace, contract.worker_name),
        run_id="recorded",
        plan_hash="0123456789abcdef",
        approver="recorder",
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    await asyncio.to_thread(store, WorkerClusterRecord(contract=contract, run=stamp), DEFAULT_NAMESPACE)
    query = WorkerRecordQuery(
        records=contract.worker, hub_namespace=contract.tenant_namespace, worker=contract.worker_name
    )
    handle = await client.start_workflow(
        WorkerClusterRecords.run, query, id=records_read_id("recorded-worker"), task_queue=queue
    )
    assert (await handle.result()).record is not None, "the worker read the record it was given"
    return handle


async def with_lab(
    name: str, brownfield: bool, env: Env, drive: Callable[[Client, str, Lab], Awaitable[WorkflowHandle[Any, Any]]]
) -> None:
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
    lab.fault(
        "worker",
        [
            {
                "path": r"/namespaces/trainy-system/deployments$",
                "methods": ["POST"],
                "error_rate": 1.0,
                "error_status": 422,
            },
            {"path": r"/namespaces/trainy-system$", "methods": ["DELETE"], "error_rate": 1.0, "error_status": 403},
        ],
    )
    handle = await client.start_workflow(
        "WorkerEnrollment",
        {"contract": lab.contract().model_dump(mode="json"), "condition_budget_s": 5},
        id="enroll/forecasting/forecasting-us",
        task_queue=queue,
    )
    status = await wait_stage(handle, "gate:approve_plan")
    await handle.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    return handle


async def compensation_retried(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    handle = await compensation(client, queue, lab)
    await wait_stage(handle, "gate:retry_rollback")
    lab.fault("worker", [])
    await handle.execute_update("retry_rollback", GateAnswer(approver="ops"))
    return handle


async def cancelled(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    handle = await brownfield_until(client, queue, lab, ("submissions_paused",), "approve_adoption")
    await handle.cancel()
    return handle


async def resume_expired(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    return await brownfield_until(
        client, queue, lab, ("submissions_paused", "approve_adoption", "uncordon"), "resume_submissions"
    )


async def replanned(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    handle = await client.start_workflow(
        "WorkerEnrollment",
        {"contract": lab.contract().model_dump(mode="json"), "condition_budget_s": 20},
        id="enroll/forecasting/forecasting-us",
        task_queue=queue,
    )
    first = await wait_stage(handle, "gate:approve_plan")
    lab.worker.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "trainy-byoc-system"}})
    await approve_twice(handle, first)
    return handle


async def greenfield(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    """A greenfield enrollment approved at once, as one started today runs (every patch its path checks)."""
    handle = await client.start_workflow(
        "WorkerEnrollment",
        {"contract": lab.contract().model_dump(mode="json"), "condition_budget_s": 20},
        id="enroll/forecasting/forecasting-us",
        task_queue=queue,
    )
    status = await wait_stage(handle, "gate:approve_plan")
    await handle.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    return handle


async def bootstrap_gated(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    """A greenfield enrollment with the stand-in in its second dialect: the plan ``konduktor worker bootstrap``
    printed waits at ``approve_plan`` (the enrollment worker approves it as shown) before its prompt is answered."""
    os.environ[DIALECT_ENV] = "table"
    try:
        handle = await greenfield(client, queue, lab)
        await handle.result()
    finally:
        del os.environ[DIALECT_ENV]
    return handle


async def approve_twice(handle: WorkflowHandle[Any, Any], first: RunStatus) -> None:
    """Approve the plan of ``first``, wait until approve_plan opens again with another plan, approve that too."""
    await handle.execute_update("approve_plan", {"plan_hash": first.plan_hash})
    again = await wait_stage(handle, "gate:approve_plan")
    while again.plan_hash == first.plan_hash:
        again = await wait_stage(handle, "gate:approve_plan")
    await handle.execute_update("approve_plan", {"plan_hash": again.plan_hash})


async def decommission(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    dec, status = await decommission_at_gate(client, queue, lab)
    await dec.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    return dec


async def decommission_reapproved(client: Client, queue: str, lab: Lab) -> WorkflowHandle[Any, Any]:
    """A decommission whose reset dry run changes between approval and reset (a ServiceAccount Konduktor would
    delete appears): the gate opens again with the new text, which is approved."""
    dec, first = await decommission_at_gate(client, queue, lab)
    lab.worker.create(LATE, "trainy-system")
    await approve_twice(dec, first)
    return dec


async def decommission_at_gate(client: Client, queue: str, lab: Lab) -> tuple[WorkflowHandle[Any, Any], RunStatus]:
    """An enrolled worker's decommission, waiting at its plan gate."""
    enroll = await client.start_workflow(
        "WorkerEnrollment",
        {"contract": lab.contract().model_dump(mode="json"), "condition_budget_s": 20},
        id="enroll/forecasting/forecasting-us",
        task_queue=queue,
    )
    status = await wait_stage(enroll, "gate:approve_plan")
    await enroll.execute_update("approve_plan", {"plan_hash": status.plan_hash})
    await enroll.result()
    dec = await client.start_workflow(
        "WorkerDecommission",
        DecommissionInput(contract=lab.contract()),
        id="decommission/forecasting/forecasting-us",
        task_queue=queue,
        result_type=DecommissionResult,
    )
    return dec, await wait_stage(dec, "gate:approve_plan")


RECORDINGS: dict[str, Callable[[], Awaitable[None]]] = {
    "onboarding-cancelled": lambda: onboarding("cancelled", FakeWorld(hang_at="kube.quota")),
    "onboarding-replanned": lambda: onboarding("replanned", FakeWorld()),
    "onboarding-replan-preflighted": lambda: onboarding("replan-preflighted", FakeWorld()),
    "onboarding-replan-refused": lambda: onboarding("replan-refused", FakeWorld()),
    "onboarding-adopted": lambda: onboarding("adopted", FakeWorld(appeared=[ADOPTION])),
    "onboarding-rollback-retried": lambda: onboarding(
        "rollback-retried", FakeWorld(fail_at="storage.quotas", undo_failures={"slurm.undo:accounts": 1})
    ),
    "onboarding-smoke-rerun": lambda: onboarding("smoke-rerun", FakeWorld(smoke_errors={"smoke.single_node": 1})),
    "onboarding-rollback-incomplete": lambda: onboarding(
        "rollback-incomplete",
        FakeWorld(fail_at="kube.rbac", undo_failures={"kube.undo:namespace": 99}),
        start_time_skipping,
        approval_escalate_after_s=3600,
        approval_expire_after_s=2 * 24 * 3600,
    ),
    "onboarding-gate-notified-local": gate_notified,
    "plan-completed": lambda: plan("completed", FakeWorld()),
    "plan-refused": lambda: plan("refused", FakeWorld(preflight_error="64 GPUs wanted, 8 free")),
    "records-read": lambda: records("read", FakeWorld()),
    "records-worker": lambda: with_lab("records-worker", False, start_dev_server, worker_record),
    "offboarding-purged": lambda: offboarding("purged", FakeWorld(present=True), True, "tenant-offboarded"),
    "offboarding-replanned": lambda: offboarding("replanned", FakeWorld(present=True), False, "tenant-replanned"),
    "offboarding-cancels-jobs": lambda: offboarding(
        "cancels-jobs", FakeWorld(present=True, jobs=["4101", "4102"], late_jobs=["4103"]), False, "tenant-drained"
    ),
    "enrollment-compensation-incomplete": lambda: with_lab(
        "enrollment-compensation-incomplete", False, start_dev_server, compensation
    ),
    "enrollment-rollback-retried": lambda: with_lab(
        "enrollment-rollback-retried", False, start_dev_server, compensation_retried
    ),
    "enrollment-cancelled": lambda: with_lab("enrollment-cancelled", True, start_dev_server, cancelled),
    "enrollment-resume-expired": lambda: with_lab(
        "enrollment-resume-expired", True, start_time_skipping, resume_expired
    ),
    "enrollment-replanned": lambda: with_lab("enrollment-replanned", False, start_dev_server, replanned),
    "enrollment-gate-notified": lambda: with_lab("enrollment-gate-notified", False, start_dev_server, greenfield),
    "enrollment-bootstrap-plan-gate": lambda: with_lab(
        "enrollment-bootstrap-plan-gate", False, start_dev_server, bootstrap_gated
    ),
    "decommission-gated": lambda: with_lab("decommission-gated", False, start_dev_server, decommission),
    "decommission-reset-reapproved": lambda: with_lab(
        "decommission-reset-reapproved", False, start_dev_server, decommission_reapproved
    ),
    "decommission-plan-names-hub": lambda: with_lab(
        "decommission-plan-names-hub", False, start_dev_server, decommission
    ),
}
"""Each history this module records, by file name (without .json)."""


async def main(names: list[str]) -> None:
    unknown = set(names) - set(RECORDINGS)
    if not names or unknown:
        raise SystemExit(f"name the histories to record (never again once committed): {', '.join(RECORDINGS)}")
    for name in names:
        await RECORDINGS[name]()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
