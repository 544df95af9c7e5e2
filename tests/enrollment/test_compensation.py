"""A failed enrollment removes what it installed and the enrollment record, and leaves pre-existing objects alone."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tenantflow.models.enrollment_workflows import INSTALLED_BY
from tests.enrollment.conftest import Lab, enrollment_worker, failure, start_approved, world


async def test_install_failing_half_way_rolls_back_to_the_world_before(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    """The agent Deployment is refused (422) after namespaces, RBAC and Secrets were created: all of it goes,
    so does the BootstrapEnrollment, and every store equals its snapshot before the run."""
    greenfield.fault(
        "worker",
        [
            {
                "path": r"/namespaces/trainy-system/deployments$",
                "methods": ["POST"],
                "error_rate": 1.0,
                "error_status": 422,
            }
        ],
    )
    before = world(greenfield)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, greenfield.contract(), condition_budget_s=5)
        kind, status = await failure(handle)
    assert kind == "KonduktorFailed"
    assert status.stage == "rolled-back"
    steps = {s.name: s.state for s in status.steps}
    assert steps["konduktor.bootstrap"] == "failed" and steps["worker.uninstall"] == "done"
    assert world(greenfield) == before
    assert not greenfield.worker.list("", "namespaces", label_selector=INSTALLED_BY)
