"""Offboarding a tenant whose job runs, against the lab's real Slurm daemons (issue 23, item 7): the teardown plan
lists the job, the job is cancelled (and gone from squeue) before the Slurm undo removes the partition and the
accounts, and nothing of the tenant is left. Without the drain the job was killed by the partition's removal
(``NODE_FAIL``), and sacctmgr refuses to delete an account while a job of it is active."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.plan import Plan
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.tenant import TenantContract
from tests.integration.runs import offboard, offboarded_after, onboard
from tests.integration.test_offboarding_e2e import small_tenant
from tests.integration.world import diff, world_snapshot
from tests.labfixture import lab_worker
from tests.starter.test_apply_lab import job_state, submit_held, until_state

USERS = ("hal", "ivy")


def busy_tenant(lab: LabEndpoints) -> TenantContract:
    """The small tenant of the offboarding test under its own slug, accounts and users (names are global)."""
    small = small_tenant(lab)
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@tenant-drain.example"})
        for u, name in zip(small.users, USERS, strict=True)
    ]
    return small.model_copy(
        update={
            "slug": "tenant-drain",
            "display_name": "Tenant Drain",
            "users": users,
            "slurm": small.slurm.model_copy(update={"team_account": "ml-team-drain"}),
        }
    )


@pytest.mark.timeout(300)
async def test_offboarding_cancels_a_running_job_before_the_accounts_go(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = busy_tenant(lab)
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api, offboarded_after(api, contract.cluster, contract.slug):
        onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message
        with tempfile.TemporaryDirectory(prefix="tf-drain-", dir="/tmp") as never_released:
            os.chmod(never_released, 0o755)
            job = await asyncio.to_thread(submit_held, contract, "ivy", Path(never_released), 1)
            assert await until_state(contract, job, {"RUNNING"}) == "RUNNING"

            plans: list[Plan] = []
            result = await offboard(api, contract, purge=True, plans=plans)

        assert result.status == "completed", result.message
        [plan] = plans
        jobs = [
            (s.layer, s.kind, s.name, s.action.value, s.detail.get("cancel")) for s in plan.steps if s.kind == "job"
        ]
        assert jobs == [("slurm", "job", job, "delete", f"job {job} (ivy)")], plan.steps
        assert job_state(contract, job) == "CANCELLED"
        assert [(r.kind, r.name, r.outcome.value) for r in result.removed if r.kind == "job"] == [
            ("job", job, "deleted")
        ]

        history = await api.client.get_workflow_handle(offboarding_id(contract.slug)).fetch_history()
        scheduled: dict[str, int] = {}
        for e in history.events:
            if e.HasField("activity_task_scheduled_event_attributes"):
                scheduled.setdefault(e.activity_task_scheduled_event_attributes.activity_type.name, e.event_id)
        cancelled = next(
            e.event_id
            for e in history.events
            if e.HasField("activity_task_completed_event_attributes")
            and e.activity_task_completed_event_attributes.scheduled_event_id == scheduled["slurm.cancel_jobs"]
        )
        assert cancelled < scheduled["slurm.undo"], "the job was gone before the Slurm accounts were deleted"

    residue = diff(before, world_snapshot(lab))
    assert all(line.startswith("+ ") and any(u in line for u in USERS) for line in residue), "\n".join(residue)
