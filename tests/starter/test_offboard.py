"""``tenantflow offboard``: the contract comes from the tenant's onboarding run; purge needs confirm-purge."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.offboarding import OffboardingResult
from tests.starter.conftest import tenantflow, tenantflow_json, unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


async def test_offboard_uses_the_onboarding_contract_and_waits_for_confirm_purge(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    async with fake_worker(dev_env, world) as api:
        contract = example_tenant(unique_slug())
        onboarding = await api.start_onboarding(contract)
        await wait_for_stage(api, onboarding, "gate:approve_plan")
        await api.reject(onboarding.id, "only here to record the contract")
        await onboarding.result()

        started = await tenantflow_json(api, "offboard", contract.slug, "--purge-data")
        workflow_id = started["workflow_id"]
        assert workflow_id == f"offboard/{contract.slug}"
        status = await wait_for_stage(api, api.handle(workflow_id), "gate:approve_plan")
        assert status.plan_hash
        code, _, err = await tenantflow(api, "confirm-purge", workflow_id)
        assert code == 4 and "not open" in err
        await tenantflow_json(api, "approve", workflow_id, "--plan-hash", status.plan_hash)
        await wait_for_stage(api, api.handle(workflow_id), "gate:confirm_purge")
        await tenantflow_json(api, "confirm-purge", workflow_id)
        result: OffboardingResult = await api.result(workflow_id, OffboardingResult)
        code, _, err = await tenantflow(api, "offboard", "tenant-nobody")  # with a worker: it reads the records
    assert result.status == "completed" and not result.kept
    assert "storage.undo:filesystems" in world.calls
    assert code == 5, err
