"""A term that ends after a ``tenantflow apply`` added a user (issue 26, item 5), against the chaos lab: the
lifecycle still holds the first onboarding's contract, yet the offboarding it starts at expiry deactivates the added
user in Authentik too, since it offboards the contract of the tenant's latest record. Nothing else is touched and,
once the data is purged, the world is as it was (deactivated users are kept by design)."""

from __future__ import annotations

from datetime import timedelta

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.lifecycle import LifecycleInput
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.run_ids import lifecycle_id, offboarding_id
from tests.approvers import reviewer
from tests.chaos.conftest import Rig, approve_and_wait, small_tenant
from tests.chaos.kit import STATS, comparable, compare_worlds, foreign_touched
from tests.chaos.kit import world as chaos_world
from tests.integration.runs import offboard
from tests.integration.world import world_snapshot
from tests.workflows.harness import wait_for_stage
from tests.workflows.term_parent import start_lifecycle_child

SLUG = "tenant-exp"


async def test_expiry_after_an_apply_that_added_a_user_deactivates_that_user(rig: Rig, chaos_lab: LabEndpoints) -> None:
    scenario = STATS.scenario("lifecycle expiry after an apply that added a user")
    first = small_tenant(chaos_lab, SLUG, ("ex-kai", "ex-lev"))
    added = first.users[0].model_copy(update={"username": "ex-mio", "email": f"ex-mio@{SLUG}.example"})
    latest = first.model_copy(update={"users": [*first.users, added]})
    ours = (SLUG, first.slurm.team_account, *latest.usernames)
    start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
    api = rig.api
    onboarding = await api.start_onboarding(first)
    state, message = await approve_and_wait(api, onboarding.id)
    assert state == "completed", message
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
    params = LifecycleInput(contract=first, term_end=now + timedelta(seconds=1), reminder_days=[])
    term = await start_lifecycle_child(api.client, api.task_queue, params)
    assert (await term.result()).status == "expired"
    offboarding = api.client.get_workflow_handle(offboarding_id(SLUG), result_type=OffboardingResult)
    status = await wait_for_stage(api, offboarding, "gate:approve_plan", timeout_s=120)
    assert status.plan_hash
    await reviewer(api).approve(offboarding.id, status.plan_hash)
    assert (await offboarding.result()).status == "completed"

    users = world_snapshot(chaos_lab)["authentik"]["users"]
    assert {name: users[name]["is_active"] for name in latest.usernames} == {
        "ex-kai": False,
        "ex-lev": False,
        "ex-mio": False,
    }
    assert (await offboard(api, latest, purge=True)).status == "completed", "the data purged: the world as it was"
    touched = foreign_touched(before, world_snapshot(chaos_lab), ours, scenario)
    assert not touched, "\n".join(touched)
    compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    STATS.runs_completed += 1
    scenario.outcome = "added user deactivated"
