"""What the workflows put in a record (contract, plan hash, approver, run id, handover) and that a record that
cannot be written leaves the onboarding completed with a warning; fake activities on the dev server."""

from __future__ import annotations

import uuid

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.records import RecordStatus
from tenantflow.models.results import Severity
from tenantflow.starter.client import TenantflowClient
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def onboard(api: TenantflowClient, slug: str, approver: str) -> tuple[OnboardingResult, str]:
    handle = await api.start_onboarding(example_tenant(slug))
    status = await wait_for_stage(api, handle, "gate:approve_plan")
    assert status.plan_hash
    await api.approve(handle.id, status.plan_hash, on_behalf_of=approver)
    result: OnboardingResult = await handle.result()
    return result, (await handle.describe()).run_id


async def test_the_record_holds_what_the_run_applied_and_who_approved_it(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld()
    slug = f"tenant-w{uuid.uuid4().hex[:6]}"
    async with fake_worker(dev_env, world) as api:
        result, run_id = await onboard(api, slug, "hana")
    [record] = world.records
    assert result.status == "completed" and not [f for f in result.findings if f.check == "record"]
    assert (record.contract.slug, record.status, record.handover) == (slug, RecordStatus.onboarded, result.handover)
    assert (record.run.plan_hash, record.run.approver) == (result.plan_hash, "hana")
    assert (record.run.workflow_id, record.run.run_id) == (f"tenant/{slug}", run_id)
    assert record.applied == result.applied


async def test_who_approved_which_plan_and_when_is_in_status_result_handover_and_record(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld()
    slug = f"tenant-w{uuid.uuid4().hex[:6]}"
    async with fake_worker(dev_env, world) as api:
        result, _ = await onboard(api, slug, "hana")
        status = await api.status(f"tenant/{slug}")
    [approval] = result.approvals
    assert (approval.gate, approval.approver, approval.approved) == ("approve_plan", "hana", True)
    assert approval.plan_hash == result.plan_hash and approval.at.tzinfo is not None
    assert status.approvals == result.approvals
    assert result.handover is not None and result.handover.approvals == result.approvals
    assert f"approve_plan approved (plan {result.plan_hash}) by hana at " in result.handover.markdown
    [record] = world.records
    assert record.run.approvals == result.approvals and record.handover == result.handover


async def test_a_rejection_is_in_the_status_and_result_as_not_approved(dev_env: WorkflowEnvironment) -> None:
    async with fake_worker(dev_env, FakeWorld()) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-w{uuid.uuid4().hex[:6]}"))
        await wait_for_stage(api, handle, "gate:approve_plan")
        await api.reject(handle.id, "wrong nodes", on_behalf_of="ivo")
        result: OnboardingResult = await handle.result()
    [rejection] = result.approvals
    assert (rejection.gate, rejection.approver, rejection.approved, rejection.comment) == (
        "approve_plan",
        "ivo",
        False,
        "wrong nodes",
    )


async def test_a_record_that_cannot_be_written_leaves_the_run_completed_with_a_warning(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld(fail_at="records.tenant")
    async with fake_worker(dev_env, world) as api:
        result, _ = await onboard(api, f"tenant-w{uuid.uuid4().hex[:6]}", "ivo")
    assert result.status == "completed"
    [warning] = [f for f in result.findings if f.check == "record"]
    assert warning.severity is Severity.warning and "injected failure" in warning.message
    assert not any(call.endswith(".undo") or ".undo:" in call for call in world.calls), "nothing rolled back"
