"""``tenantflow onboard`` against the lab in an 80-column terminal (tmux): each planned object on one line."""

from __future__ import annotations

import contextlib
import shlex

from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.run_ids import onboarding_id
from tests.labfixture import lab_worker
from tests.starter.plan_screen import assert_one_line_per_object
from tests.starter.tmux import exit_code, run_cli, terminal
from tests.workflows.contract import EXAMPLES


async def test_onboard_shows_each_planned_object_on_one_line_at_80_columns(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = EXAMPLES / "tenant-foo.yaml"
    workflow_id = onboarding_id("tenant-foo")
    async with lab_worker(dev_env.client, lab) as api:
        try:
            async with terminal(80) as session:
                await run_cli(session, api, f"onboard {shlex.quote(str(contract))}")
                code, screen = await exit_code(session)
            assert code == 0, screen
            status = await api.status(workflow_id)
            assert status.stage == "gate:approve_plan" and status.plan is not None
            assert f"plan hash {status.plan_hash}" in screen
            assert_one_line_per_object(screen, status.plan, 80)
        finally:
            with contextlib.suppress(RPCError, WorkflowFailureError):
                await api.cancel(workflow_id)
                await api.result(workflow_id)
