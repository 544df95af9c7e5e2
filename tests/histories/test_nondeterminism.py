"""A deliberately non-deterministic change to a workflow fails replay of the recorded histories."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
    from tenantflow.models.onboarding import OnboardingInput, OnboardingResult, StepInput
    from tenantflow.models.runbook import CAPACITY_PREFLIGHT
    from tenantflow.worker.codec import PLAIN
    from tenantflow.workflows.enrollment import WorkerEnrollmentWorkflow
    from tenantflow.workflows.onboarding import TenantOnboarding

HISTORIES = Path(__file__).parent


@workflow.defn(name="TenantOnboarding")
class OnboardingWithExtraStep(TenantOnboarding):
    """Today's onboarding plus one activity before preflight: what an unversioned edit looks like."""

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        await workflow.execute_activity(
            CAPACITY_PREFLIGHT.name, StepInput(contract=params.contract), start_to_close_timeout=timedelta(minutes=1)
        )
        return await super().run(params)


@workflow.defn(name="WorkerEnrollment")
class EnrollmentWithTimer(WorkerEnrollmentWorkflow):
    """Today's enrollment with a timer slipped in front: also a command the history does not have."""

    @workflow.run
    async def run(self, params: EnrollmentInput) -> EnrollmentResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(params)


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("onboarding-completed", OnboardingWithExtraStep),
        ("onboarding-rolledback", OnboardingWithExtraStep),
        ("enrollment-brownfield", EnrollmentWithTimer),
    ],
)
async def test_changed_workflow_fails_replay(name: str, variant: type) -> None:
    path = HISTORIES / f"{name}.json"
    history = WorkflowHistory.from_json(name, path.read_text())
    replayer = Replayer(workflows=[variant], data_converter=PLAIN)
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(history)
