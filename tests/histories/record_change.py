"""Record the ``TenantChange`` histories for the replay tests from a real run against a whole lab.

Run ``python -m tests.histories.record_change NAME`` (as root: the lab runs real slapd and Slurm) after a
deliberate, versioned change of the change workflow, NAME a history not yet committed (``change-completed``
without one); commit the JSON it writes beside this file. It onboards the test tenant of
``tests/starter/test_apply_lab.py`` with three users and 16 GPUs, then changes it to two users and 8 GPUs in one
run another principal approves: every step of a change runs (drain, wait, the apply steps, release, user removal,
validation). ``change-gate-notified`` is that run as a change started today runs it, with every patch it checks
(``stage-upsert-on-change``, ``gate-notifications-local``, ``replan-preflights``, ...).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer, session_approvers
from tests.histories.record_drift import record_from_lab
from tests.integration.runs import onboard
from tests.starter.test_apply_lab import everyone, with_gpus, with_users
from tests.workflows.harness import wait_for_stage


async def shrink_and_remove(api: TenantflowClient, lab: LabEndpoints) -> WorkflowHandle[Any, OnboardingResult]:
    three = everyone(lab)
    assert (await onboard(api, three)).status == "completed"
    handle = await api.start_change(with_gpus(with_users(three, ["uma", "vic"], three), 8), three)
    status = await wait_for_stage(api, handle, "gate:approve_plan", timeout_s=120)
    assert status.plan_hash
    await reviewer(api).approve(handle.id, status.plan_hash)
    result: OnboardingResult = await handle.result()
    assert result.status == "completed", result.message
    return handle


async def main(name: str) -> None:
    session_approvers()  # the worker checks approvals as shipped: four eyes, verified approvers
    await record_from_lab(f"{name}.json", shrink_and_remove)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "change-completed"))
