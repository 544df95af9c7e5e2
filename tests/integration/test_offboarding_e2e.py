"""Offboarding a finished tenant against the lab: everything goes but the data (unless purged) and the
deactivated user records the runbook keeps."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from lab.endpoints import LabEndpoints
from models.offboarding import OffboardingResult
from models.onboarding import OffboardingInput, OnboardingResult
from models.tenant import TenantContract
from starter.client import TenantflowClient
from starter.contracts import load_tenant
from tests.integration.world import diff, world_snapshot
from tests.labfixture import lab_worker
from tests.workflow.contract import EXAMPLES
from tests.workflow.harness import wait_for_stage
from workflows.offboarding import offboarding_id

USERS = ("dora", "emil")


def small_tenant(lab: LabEndpoints) -> TenantContract:
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml", kubeconfig=str(lab.kubeconfig))
    users = [u.model_copy(update={"username": name, "email": f"{name}@tenant-off.example"})
             for u, name in zip(foo.users, USERS, strict=False)]
    return foo.model_copy(update={
        "slug": "tenant-off", "display_name": "Tenant Off", "users": users,
        "capacity": foo.capacity.model_copy(update={"gpus": 16}),
        "slurm": foo.slurm.model_copy(update={"team_account": "ml-team-off"}),
        "login": foo.login.model_copy(update={"hostname": None})})


async def offboard(api: TenantflowClient, contract: TenantContract, purge: bool) -> OffboardingResult:
    handle = await api.client.start_workflow(
        "TenantOffboarding", OffboardingInput(contract=contract, purge_data=purge), id=offboarding_id(contract.slug),
        task_queue=api.task_queue, result_type=OffboardingResult)
    status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=60)
    assert status.plan_hash
    await api.approve(handle.id, status.plan_hash)
    if purge:
        await wait_for_stage(api, handle, "gate:confirm_purge")
        await api.answer_gate(handle.id, "confirm_purge")
    result: OffboardingResult = await handle.result()
    return result


async def test_offboarding_keeps_data_until_purged(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> None:
    contract = small_tenant(lab)
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api:
        handle = await api.start_onboarding(contract)
        status = await api.wait_for_plan(handle.id)
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        onboarded: OnboardingResult = await handle.result()
        assert onboarded.status == "completed", onboarded.message

        kept = await offboard(api, contract, purge=False)
        assert kept.status == "completed"
        assert {p.kind for p in kept.kept} >= {"WekaOrganization", "WekaFilesystem", "WekaQuota"}
        residue = diff(before, world_snapshot(lab))
        assert residue and all(line.startswith(("+ ", "~ weka/")) for line in residue), "\n".join(residue)
        assert all("weka" in line or any(u in line for u in USERS) for line in residue), "\n".join(residue)

        purged = await offboard(api, contract, purge=True)
        assert purged.status == "completed"
    residue = diff(before, world_snapshot(lab))
    assert all(any(u in line for u in USERS) for line in residue), "\n".join(residue)
    assert all(line.startswith("+ ") for line in residue), "\n".join(residue)
