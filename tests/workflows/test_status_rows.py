"""What ``status`` lists (issue 27's rough edges): a step whose check found an error is shown ``failed``, never
``done`` (a re-plan's rows replacing the first plan's: tests/workflows/test_replan_before_apply.py)."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.runbook import CAPACITY
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding, fake_worker


async def test_a_step_whose_check_found_an_error_is_failed_not_done(dev_env: WorkflowEnvironment) -> None:
    async with fake_worker(dev_env, FakeWorld(preflight_error="only 1 free node")) as api:
        handle = await api.start_onboarding(example_tenant(f"tenant-r{uuid.uuid4().hex[:8]}"))
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await api.status(handle.id)
    states = {record.name: record.state for record in status.steps}
    assert states[CAPACITY.preflight.name] == "failed", status.steps
    [failed] = [record for record in status.steps if record.name == CAPACITY.preflight.name]
    assert failed.error == "capacity.nodes: only 1 free node", failed
    assert [state for name, state in states.items() if name != CAPACITY.preflight.name] == ["done"] * (
        len(states) - 1
    ), status.steps


async def test_a_failed_step_row_says_why(dev_env: WorkflowEnvironment) -> None:
    """The row of a step that failed names its error's type and message, not Temporal's "Activity task failed"."""
    async with fake_worker(dev_env, FakeWorld(fail_at="kube.quota")) as api:
        handle = await approved_onboarding(api, example_tenant(f"tenant-r{uuid.uuid4().hex[:8]}"))
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await api.status(handle.id)
    [row] = [record for record in status.steps if record.name == "kube.quota"]
    assert (row.state, row.error) == ("failed", "Invalid: injected failure at kube.quota"), row
    assert all(not r.error for r in status.steps if r.state == "done"), status.steps
