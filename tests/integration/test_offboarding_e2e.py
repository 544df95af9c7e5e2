"""Offboarding a finished tenant against the lab: everything goes but the data (unless purged) and the
deactivated user records the runbook keeps; a tenant onboarded again onto its kept data gets its directories
back under its new group."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.results import AuthentikGroup, WekaDirectory
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


def group_gid(result: OnboardingResult) -> int:
    gid = next(r.data_as(AuthentikGroup).gid for r in result.applied if r.layer == "identity" and r.kind == "Group")
    assert gid is not None
    return gid


def assert_directories_owned_by_the_new_group(
    lab: LabEndpoints, first: OnboardingResult, again: OnboardingResult
) -> None:
    """Offboarding kept the directories and removed the group; the new group has a new gid, and every directory
    (as Weka recorded the directory Job's chown, what a pod's ``stat`` shows) carries it, the step saying from
    which gid it moved."""
    old, new = group_gid(first), group_gid(again)
    assert new != old, "a re-made group gets a new gid"
    owners = {f["name"]: f["owners"] for f in world_snapshot(lab)["weka"]["filesystems"].values()}
    dirs = {"tenant-off-scratch": ["/tenant-off"], "tenant-off-home": [f"/{u}" for u in USERS]}
    assert {(fs, d): owners[fs][d]["gid"] for fs, paths in dirs.items() for d in paths} == {
        (fs, d): new for fs, paths in dirs.items() for d in paths
    }
    moved = {r.name: (r.data_as(WekaDirectory).previous, r.outcome) for r in again.applied if r.kind == "WekaDirectory"}
    assert {name: (p.gid if p else None, o.value) for name, (p, o) in moved.items()} == {
        name: (old, "updated") for name in ("/scratch/tenant-off", *(f"/home/{u}" for u in USERS))
    }


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

        again = await onboard(api, contract)
        assert again.status == "completed", again.message
        assert_directories_owned_by_the_new_group(lab, onboarded, again)

        purged = await offboard(api, contract, purge=True)
        assert purged.status == "completed"
    residue = diff(before, world_snapshot(lab))
    assert all(any(u in line for u in USERS) for line in residue), "\n".join(residue)
    assert all(line.startswith("+ ") for line in residue), "\n".join(residue)
