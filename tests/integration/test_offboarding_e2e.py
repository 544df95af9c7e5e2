"""Offboarding a finished tenant against the lab: everything goes but the data (unless purged) and the
deactivated user records the runbook keeps."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant
from tests.integration.runs import offboard, onboard
from tests.integration.world import diff, world_snapshot
from tests.labfixture import lab_worker
from tests.workflows.contract import EXAMPLES

USERS = ("dora", "emil")


def small_tenant(lab: LabEndpoints) -> TenantContract:
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml")
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@tenant-off.example"})
        for u, name in zip(foo.users, USERS, strict=False)
    ]
    return foo.model_copy(
        update={
            "slug": "tenant-off",
            "display_name": "Tenant Off",
            "users": users,
            "capacity": foo.capacity.model_copy(update={"gpus": 16}),
            "slurm": foo.slurm.model_copy(update={"team_account": "ml-team-off"}),
            "login": foo.login.model_copy(update={"hostname": None}),
        }
    )


async def test_offboarding_keeps_data_until_purged(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> None:
    contract = small_tenant(lab)
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api:
        onboarded = await onboard(api, contract)
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
