"""Every gate of every workflow is an update of its own name (one JSON argument) with a description, and a signal.

The gates are enumerated from the code: every call that opens one, in each workflow
class, its bases and the collaborators their ``__init__`` builds (run state, saga rollback,
records ...), must name a declared gate, and every declared gate must be opened somewhere.
The UI's Send an Update form lists what the
``__temporal_workflow_metadata`` query reports, so each workflow is started (on a
worker with only the fake onboarding activities: a run waits at its first other step or at a gate; onboarding's
read-only steps are local activities, which the workflow's own worker must run) and asked. The gates are then
answered by name with the plain ``temporal`` CLI: offboarding's ``approve_plan`` and
``confirm_purge`` here, onboarding's ``approve_plan`` in tests/starter/test_temporal_cli.py,
every gate of an enrollment and of a decommission in tests/enrollment/test_gate_updates.py,
``retry_rollback`` in test_rollback_gate.py, ``smoke_failed`` in test_smoke_gate.py; tests/ui sends ``approve_plan``
from the UI.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
import uuid
from typing import Any

from pydantic import BaseModel
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.models.change import ChangeInput
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import DecommissionInput, EnrollmentInput
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.run_ids import offboarding_id
from tenantflow.models.targets import KubeTarget
from tenantflow.worker.registry import WORKFLOWS
from tenantflow.workflows.gate_handlers import GatedWorkflow
from tests.starter.test_temporal_cli import temporal
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

ENROLLMENT = WorkerEnrollment(
    hub=KubeTarget(context="hub"),
    worker=KubeTarget(context="worker"),
    tenant_namespace="forecasting",
    worker_name="forecasting-us",
    workload_namespaces=["forecasting"],
)
INPUTS: dict[str, BaseModel] = {
    "TenantOnboarding": OnboardingInput(contract=example_tenant("tenant-gates")),
    "TenantOffboarding": OffboardingInput(contract=example_tenant("tenant-gates")),
    "TenantChange": ChangeInput(contract=example_tenant("tenant-gates"), previous=example_tenant("tenant-gates")),
    "WorkerEnrollment": EnrollmentInput(contract=ENROLLMENT),
    "WorkerDecommission": DecommissionInput(contract=ENROLLMENT),
}


GATED = [workflow for workflow in WORKFLOWS if issubclass(workflow, GatedWorkflow)]
"""Every workflow with gates (TenantLifecycle has none: it starts the offboarding, which has)."""


def test_every_gated_workflow_has_an_input_here() -> None:
    assert {workflow.WORKFLOW for workflow in GATED} == set(INPUTS)


OPENERS = {"wait_gate", "_gate", "wait_plan_approval"}
"""The methods that open a gate: the gate's name is their first argument (``wait_plan_approval``: approve_plan)."""


def gates_of(workflow_class: Any) -> list[str]:
    """The gates a workflow declares: approve_plan and its ``YES_NO_GATES`` (each an update of its own name)."""
    return ["approve_plan", *workflow_class.YES_NO_GATES]


def ours(cls: Any) -> bool:
    return isinstance(cls, type) and cls.__module__.startswith("tenantflow.workflows.")


def classes_of(workflow_class: Any) -> list[type]:
    """The workflow class, its bases and every collaborator their ``__init__`` builds (by a call of a class of
    tenantflow.workflows), and theirs in turn."""
    found: list[type] = []
    todo = [cls for cls in workflow_class.__mro__ if ours(cls)]
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found.append(cls)
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        module = sys.modules[cls.__module__]
        for call in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(init)))):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                built = getattr(module, call.func.id, None)
                if ours(built):
                    todo.append(built)
    return found


def gates_opened_by(workflow_class: Any) -> set[str]:
    """The gates the code of a workflow class, its bases and its collaborators opens, read from their source: the
    first argument of every gate opening call, a literal or a module constant; a helper handing its own parameter on
    is skipped (its callers are read)."""
    opened: set[str] = set()
    for cls in classes_of(workflow_class):
        module = sys.modules[cls.__module__]
        for function in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls)))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            parameters = {argument.arg for argument in function.args.args}
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                if call.func.attr == "wait_plan_approval":
                    opened.add("approve_plan")
                elif call.func.attr in OPENERS or (
                    call.func.attr == "wait" and ast.unparse(call.func.value).endswith("gates")
                ):
                    name = call.args[0]
                    if isinstance(name, ast.Constant):
                        opened.add(name.value)
                    elif not (isinstance(name, ast.Name) and name.id in parameters):
                        opened.add(getattr(module, ast.unparse(name)))
    return opened


def test_every_gate_opened_is_a_declared_gate() -> None:
    """What the next test checks in the UI's metadata is every gate a run can wait at, and no more."""
    for workflow_class in WORKFLOWS:
        declared = set(gates_of(workflow_class)) if workflow_class in GATED else set()
        assert gates_opened_by(workflow_class) == declared, workflow_class.__name__


async def test_every_gate_of_every_workflow_is_a_described_update_and_signal(dev_env: WorkflowEnvironment) -> None:
    queue = f"gates-{uuid.uuid4().hex[:8]}"
    async with Worker(dev_env.client, task_queue=queue, workflows=WORKFLOWS, activities=FakeWorld().activities()):
        for workflow_class in GATED:
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
