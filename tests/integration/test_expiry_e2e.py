"""A term that ends after a ``tenantflow apply`` added a user, against the lab (issue 26, item 5): the lifecycle
still holds the first onboarding's contract, yet the offboarding it starts at expiry deactivates the added user in
Authentik too, since it offboards the contract of the tenant's latest record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.lifecycle import LifecycleInput, LifecycleResult
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import lifecycle_id, offboarding_id
from tenantflow.workflows.lifecycle import TenantLifecycle
from tests.approvers import reviewer
from tests.integration.runs import offboard, onboard
from tests.integration.world import world_snapshot
from tests.labfixture import lab_worker
from tests.starter.test_apply_lab import everyone, with_users
from tests.workflows.harness import wait_for_stage

SLUG = "tenant-exp"
NAMES = ("kai", "lev", "mio")
"""The tenant's users (usernames are global in the lab): kai and lev onboarded, mio added by the change."""


@pytest.mark.timeout(600)
async def test_expiry_after_an_apply_that_added_a_user_deactivates_that_user(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    latest = everyone(lab, SLUG, NAMES)
    first = with_users(latest, ["kai", "lev"], latest)
    async with lab_worker(dev_env.client, lab) as api:
        assert (await onboard(api, first)).status == "completed"
        change = await api.start_change(latest, first)
        status = await wait_for_stage(api, change, "gate:approve_plan", timeout_s=120)
        assert status.plan_hash
        await reviewer(api).approve(change.id, status.plan_hash)
        changed: OnboardingResult = await change.result()
        assert changed.status == "completed", changed.message

        # the onboarding's lifecycle holds the first contract; a term of it that ends now shows what expiry offboards
        await api.client.get_workflow_handle(lifecycle_id(SLUG)).terminate("test: a term that ends now")
        now = (await api.client.get_workflow_handle(change.id).describe()).close_time
        assert now is not None
        term = await api.client.start_workflow(
            TenantLifecycle.run,
            LifecycleInput(contract=first, term_end=now + timedelta(seconds=1), reminder_days=[]),
            id=lifecycle_id(SLUG),
            task_queue=api.task_queue,
            result_type=LifecycleResult,
        )
        assert (await term.result()).status == "expired"
        offboarding = api.client.get_workflow_handle(offboarding_id(SLUG), result_type=OffboardingResult)
        status = await wait_for_stage(api, offboarding, "gate:approve_plan", timeout_s=120)
        assert status.plan_hash
        await reviewer(api).approve(offboarding.id, status.plan_hash)
        assert (await offboarding.result()).status == "completed"

        users = world_snapshot(lab)["authentik"]["users"]
        assert {name: users[name]["is_active"] for name in NAMES} == {"kai": False, "lev": False, "mio": False}
        assert (await offboard(api, latest, purge=True)).status == "completed", "the lab as it was: data purged"
