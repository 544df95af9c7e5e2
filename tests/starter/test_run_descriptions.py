"""Every kind of run the client starts carries a static summary and static details: what it does, to which
target, started by whom (what the Temporal UI shows on the run's page instead of "No summary available")."""

from __future__ import annotations

import uuid

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.test_gate_updates import ENROLLMENT


async def described(handle: WorkflowHandle[object, object]) -> tuple[str | None, str | None]:
    description = await handle.describe()
    await handle.terminate("description read")
    return await description.static_summary(), await description.static_details()


async def test_every_run_says_what_it_does_to_which_target_and_who_started_it(dev_env: WorkflowEnvironment) -> None:
    api = TenantflowClient(dev_env.client, f"no-worker-{uuid.uuid4().hex[:8]}")
    slug, leaving = unique_slug(), unique_slug()
    worker = ENROLLMENT.model_copy(update={"worker_name": f"w{uuid.uuid4().hex[:6]}"})
    tenant, worker_name = example_tenant(slug), worker.worker_name
    runs = [
        (f"Onboard {slug}: 64 GPUs h100-8x, 3 users", slug, await api.start_onboarding(tenant)),
        (
            f"Offboard {leaving} (Weka data purged after confirm_purge)",
            leaving,
            await api.start_offboarding(example_tenant(leaving), purge_data=True),
        ),
        (
            f"Enroll worker {worker_name} into forecasting (greenfield)",
            worker_name,
            await api.start_enrollment(worker),
        ),
        (f"Decommission worker {worker_name} from forecasting", worker_name, await api.start_decommission(worker)),
    ]
    for summary, target, handle in runs:
        shown, details = await described(handle)
        assert shown == summary
        assert details is not None and f"- started by: `{api.identity}`" in details, details
        assert f"`{target}`" in details.splitlines()[0], details
