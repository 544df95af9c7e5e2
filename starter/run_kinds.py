"""The workflows the Python API drives, each reached through its class's methods: the run method of each workflow
type (by the name Temporal reports), the update that answers each yes/no gate (by the gate's name), and the kinds
of run on a worker cluster (enrollment, decommission) with how each is started from a :class:`WorkerEnrollment`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from temporalio.types import MethodAsyncSingleParam
from temporalio.workflow import UpdateMethodMultiParam

from tenantflow.models.change import CHANGE_WORKFLOW
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import DecommissionInput, EnrollmentInput
from tenantflow.models.run_ids import decommission_id, enrollment_id
from tenantflow.starter import summaries
from tenantflow.starter.summaries import RunDescription
from tenantflow.workflows.change import TenantChange
from tenantflow.workflows.decommission import WorkerDecommissionWorkflow
from tenantflow.workflows.enrollment import WorkerEnrollmentWorkflow
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding

W = TypeVar("W")
P = TypeVar("P", bound=BaseModel)
R = TypeVar("R")

RUNS: dict[str, MethodAsyncSingleParam[Any, Any, Any]] = {
    "TenantOnboarding": TenantOnboarding.run,
    CHANGE_WORKFLOW: TenantChange.run,
    "TenantOffboarding": TenantOffboarding.run,
    "WorkerEnrollment": WorkerEnrollmentWorkflow.run,
    "WorkerDecommission": WorkerDecommissionWorkflow.run,
    "TenantLifecycle": TenantLifecycle.run,
}
"""The run method of each workflow type the client starts, by the name Temporal reports (``describe``): a typed
handle decodes the run's result as that method's return type."""
WORKFLOW_TYPES: dict[Any, str] = {run: name for name, run in RUNS.items()}
"""The workflow type name of each run method in :data:`RUNS` (what a start statement names)."""
ENROLLMENT_GATES: dict[str, UpdateMethodMultiParam[..., Any]] = {
    "submissions_paused": WorkerEnrollmentWorkflow.submissions_paused,
    "approve_adoption": WorkerEnrollmentWorkflow.approve_adoption,
    "uncordon": WorkerEnrollmentWorkflow.uncordon,
    "resume_submissions": WorkerEnrollmentWorkflow.resume_submissions,
}
YES_NO_GATES: dict[str, UpdateMethodMultiParam[..., Any]] = {
    **ENROLLMENT_GATES,
    "confirm_purge": TenantOffboarding.confirm_purge,
    "retry_rollback": TenantOnboarding.retry_rollback,
}
"""Every yes/no gate of any workflow, by name: each is answered by the update of its own name (the method)."""


@dataclass(frozen=True)
class WorkerRun(Generic[W, P, R]):
    """A kind of run on one worker cluster, started from its :class:`WorkerEnrollment`: the workflow's run method,
    the input it takes (made of the contract and the start's options), its workflow id (of the Hub namespace and the
    worker cluster) and its description (of the contract and who started it)."""

    run: MethodAsyncSingleParam[W, P, R]
    input: Callable[..., P]
    workflow_id: Callable[[str, str], str]
    describe: Callable[[WorkerEnrollment, str], RunDescription]


ENROLLMENT_RUN = WorkerRun(WorkerEnrollmentWorkflow.run, EnrollmentInput, enrollment_id, summaries.enrollment)
DECOMMISSION_RUN = WorkerRun(WorkerDecommissionWorkflow.run, DecommissionInput, decommission_id, summaries.decommission)
