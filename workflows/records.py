"""Storing a completed run's record (:mod:`models.records`): what the CLI reads once the history is gone.

Onboarding and offboarding store a tenant record, enrollment and decommission a worker record, as their last step
and only in runs recorded with the patch :data:`TENANT_RECORD_PATCH` (:data:`WORKER_RECORD_PATCH`), so histories
recorded before replay unchanged. The stamp says which run, under which approved plan and approver, and when, and
(patch :data:`APPROVALS_PATCH`) every gate answer: who, when, which plan hash. A workflow owns one :class:`Records`
over its :class:`~tenantflow.workflows.run_state.RunState`, which it reads through public attributes only.
"""

from __future__ import annotations

from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.gates import Approval
    from tenantflow.models.records import RunStamp, StoredRecord
    from tenantflow.models.results import Finding, Severity
    from tenantflow.models.step import Step

from tenantflow.workflows.run_state import RunState

I = TypeVar("I")  # noqa: E741 - the record step's input type

TENANT_RECORD_PATCH = "tenant-record"
"""Onboarding and offboarding histories recorded before completed runs stored a tenant record replay without it."""
WORKER_RECORD_PATCH = "worker-record"
"""Enrollment and decommission histories recorded before completed runs stored a worker record replay without it."""
APPROVALS_PATCH = "approvals-stamped"
"""Histories recorded before the record and the handover sheet carried every gate answer replay without them."""


class Records:
    """The stamp and the storing of one run's record."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def approvals(self) -> list[Approval]:
        """Who answered which gate and when, for what the run passes on (record, handover sheet); empty in runs
        recorded before :data:`APPROVALS_PATCH`, whose record and handover arguments replay unchanged."""
        return list(self.state.gates.approvals) if self.state.patches.has(APPROVALS_PATCH) else []

    def stamp(self) -> RunStamp:
        """This run, its approved plan and the plan's approver, now: the stamp on the record it stores."""
        info = workflow.info()
        answer = self.state.gates.answers.get("approve_plan")
        return RunStamp(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            plan_hash=self.state.plan_hash or "",
            approver=answer.approver if answer else "",
            recorded_at=workflow.now(),
            approvals=self.approvals(),
        )

    async def store(self, step: Step[I, StoredRecord], record: I) -> None:
        """Store ``record`` in the cluster; a record that cannot be written leaves the run completed, with a warning
        finding."""
        self.state.gates.set_stage("record", "Storing the record in the cluster")
        try:
            await self.state.steps.run(step, record)
        except ActivityError as err:
            self.state.findings.append(
                Finding.failed(
                    "record",
                    f"the record was not stored: {err.cause or err}",
                    "until the history expires the CLI reads the contract from it; later pass --contract",
                    Severity.warning,
                )
            )
