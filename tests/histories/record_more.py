"""Record enrollment (greenfield, brownfield), decommission and onboarding gate-timeout histories for replay tests.

Run ``python -m tests.histories.record_more`` (as root, for nothing but the
in-process kube emulators) after a deliberate, versioned workflow change; commit
the JSON files it writes beside this file. ``python -m tests.histories.record_more NAME ...`` records only the
histories named (:data:`NAMED`): a new path's history, leaving the others as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle

from tenantflow.models.enrollment_workflows import (
    DecommissionInput,
    DecommissionResult,
    EnrollmentInput,
    EnrollmentResult,
)
from tenantflow.models.gates import ApprovePlan, GateAnswer
from tests.enrollment.conftest import enrollment_worker, start_lab
from tests.enrollment.test_greenfield import wait_stage
from tests.temporal_env import start_dev_server, start_time_skipping
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker

HERE = Path(__file__).resolve().parent
BROWNFIELD_GATES = ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions")


async def save(handle: WorkflowHandle[Any, Any], name: str) -> None:
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()
    (HERE / f"{name}.json").write_text((await handle.fetch_history()).to_json())


async def record_enrollment(brownfield: bool, name: str = "") -> None:
    env = await start_dev_server()
    with tempfile.TemporaryDirectory() as tmp:
        labs = start_lab(Path(tmp), brownfield=brownfield)
        lab = next(labs)
        try:
            async with enrollment_worker(env) as (client, queue):
                handle = await client.start_workflow(
                    "WorkerEnrollment",
                    EnrollmentInput(contract=lab.contract(brownfield=brownfield), condition_budget_s=20),
                    id="enroll/forecasting/forecasting-us",
                    task_queue=queue,
                    result_type=EnrollmentResult,
                )
                status = await wait_stage(handle, "gate:approve_plan")
                await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
                for gate in BROWNFIELD_GATES if brownfield else ():
                    await wait_stage(handle, f"gate:{gate}")
                    await handle.execute_update("answer_gate", args=[gate, GateAnswer()])
                await save(handle, name or f"enrollment-{'brownfield' if brownfield else 'greenfield'}")
                if brownfield:
                    return
                dec = await client.start_workflow(
                    "WorkerDecommission",
                    DecommissionInput(contract=lab.contract()),
                    id="decommission/forecasting/forecasting-us",
                    task_queue=queue,
                    result_type=DecommissionResult,
                )
                status = await wait_stage(dec, "gate:approve_plan")
                await dec.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
                await save(dec, "decommission-completed")
        finally:
            next(labs, None)
            await env.shutdown()


async def record_gate_timeout() -> None:
    env = await start_time_skipping()
    try:
        async with fake_worker(env, FakeWorld()) as api:
            handle = await api.start_onboarding(
                example_tenant("tenant-timeout"), approval_escalate_after_s=3600, approval_expire_after_s=2 * 24 * 3600
            )
            await save(handle, "onboarding-gate-timeout")
    finally:
        await env.shutdown()


NAMED: dict[str, Callable[[], Awaitable[None]]] = {
    # patch brownfield-cordon-beside-bootstrap: the cordon runs beside konduktor.bootstrap
    "enrollment-brownfield-cordon-beside": lambda: record_enrollment(True, "enrollment-brownfield-cordon-beside"),
}


async def main(names: list[str]) -> None:
    for name in names:
        await NAMED[name]()
    if names:
        return
    await record_enrollment(brownfield=False)
    await record_enrollment(brownfield=True)
    await record_gate_timeout()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
