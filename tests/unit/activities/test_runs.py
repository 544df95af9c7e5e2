"""Which run an activity works for: a read-only plan's activities read as the onboarding the plan previews, so the
ownership checks of its reads (objects "this run" made) answer as that onboarding's would; any other run is itself."""

from __future__ import annotations

import dataclasses

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.runs import this_run
from tenantflow.models.preview import PLAN_WORKFLOW
from tenantflow.models.run_ids import offboarding_id, onboarding_id, plan_id


def as_run(workflow_type: str, workflow_id: str) -> str:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_type=workflow_type, workflow_id=workflow_id)
    return env.run(this_run)


def test_a_plan_reads_as_the_onboarding_it_previews() -> None:
    assert as_run(PLAN_WORKFLOW, plan_id("tenant-foo", "1f2e3d")) == onboarding_id("tenant-foo")


def test_any_other_run_is_itself() -> None:
    assert as_run("TenantOffboarding", offboarding_id("tenant-foo")) == offboarding_id("tenant-foo")
    assert as_run("TenantOffboarding", plan_id("tenant-foo", "1f2e3d")) == plan_id("tenant-foo", "1f2e3d")
