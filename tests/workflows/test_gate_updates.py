"""Every gate of every workflow is an update of its own name (one JSON argument) with a description, and a signal.

The UI's Send an Update form lists what the ``__temporal_workflow_metadata``
query reports, so each workflow is started (on a worker without activities: it
waits at its first step) and asked. The gates are then answered by name with the
plain ``temporal`` CLI: offboarding's ``approve_plan`` and ``confirm_purge`` here,
every gate of an enrollment and of a decommission in tests/enrollment/test_gate_updates.py,
``retry_rollback`` in test_rollback_gate.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import DecommissionInput, EnrollmentInput
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.targets import KubeTarget
from tenantflow.worker.registry import WORKFLOWS
from tenantflow.workflows.offboarding import offboarding_id
from tests.starter.test_temporal_cli import temporal
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

ENROLLMENT = WorkerEnrollment(
    hub=KubeTarget(kubeconfig="/nonexistent", context="hub"),
    worker=KubeTarget(kubeconfig="/nonexistent", context="worker"),
    tenant_namespace="forecasting",
    worker_name="forecasting-us",
    workload_namespaces=["forecasting"],
)
INPUTS: dict[str, BaseModel] = {
    "TenantOnboarding": OnboardingInput(contract=example_tenant("tenant-gates")),
    "TenantOffboarding": OffboardingInput(contract=example_tenant("tenant-gates")),
    "WorkerEnrollment": EnrollmentInput(contract=ENROLLMENT),
    "WorkerDecommission": DecommissionInput(contract=ENROLLMENT),
}


def gates_of(workflow_class: Any) -> list[str]:
    return ["approve_plan", *workflow_class.YES_NO_GATES]


async def test_every_gate_of_every_workflow_is_a_described_update_and_signal(dev_env: WorkflowEnvironment) -> None:
    queue = f"gates-{uuid.uuid4().hex[:8]}"
    async with Worker(dev_env.client, task_queue=queue, workflows=WORKFLOWS):
        for workflow_class in WORKFLOWS:
            name = workflow_class.WORKFLOW
            handle = await dev_env.client.start_workflow(
                name, INPUTS[name], id=f"gates-{uuid.uuid4().hex}", task_queue=queue
            )
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            await handle.terminate("gate enumeration done")
            updates = {u.name: u.description for u in metadata.definition.update_definitions}
            signals = {s.name for s in metadata.definition.signal_definitions}
            for gate in gates_of(workflow_class):
                assert updates.get(gate), f"{name}: gate {gate} has no described update of its name"
                assert f"{gate}_signal" in signals, f"{name}: gate {gate} has no signal {gate}_signal"
            assert updates.get("reject_plan"), f"{name}: no described reject_plan"


async def test_offboarding_gates_answer_by_name_from_the_temporal_cli(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(present=True)
    contract = example_tenant(f"tenant-g{uuid.uuid4().hex[:8]}")
    async with fake_worker(dev_env, world) as api:
        handle = await dev_env.client.start_workflow(
            "TenantOffboarding",
            OffboardingInput(contract=contract, purge_data=True),
            id=offboarding_id(contract.slug),
            task_queue=api.task_queue,
            result_type=OffboardingResult,
        )
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        update = ("workflow", "update", "execute", "--workflow-id", handle.id, "--name")
        await temporal(api, *update, "approve_plan", "--input", json.dumps({"plan_hash": status.plan_hash}))
        status = await wait_for_stage(api, handle, "gate:confirm_purge")
        assert any("--name confirm_purge" in how for gate in status.gates for how in gate.how_to_answer)
        answer = await temporal(api, *update, "confirm_purge", "--input", '{"approver": "ops"}')
        assert "confirm_purge answered by ops" in answer
        result = await handle.result()
    assert result.status == "completed"
    assert "storage.undo:filesystems" in world.calls
