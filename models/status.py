"""What the ``status`` query of every run answers (stage, plan, gates, steps, findings) and the states a step and
a run end in. The states are ``StrEnum``: each is its string on the wire, as before they were typed."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.gates import Approval, GateState
from tenantflow.models.plan import Plan
from tenantflow.models.results import Finding
from tenantflow.models.rollback import Leftover

StepState = StrEnum("StepState", ["running", "done", "failed"])
"""Where a step of a run stands (each member's value is its name)."""
RunOutcome = StrEnum("RunOutcome", ["completed", "rejected"])
"""How a run that returns a result ended; a run that fails (preflight, validation, a rollback) raises instead."""
TermOutcome = StrEnum("TermOutcome", ["expired", "offboarded"])
"""How a tenant's lifecycle ended: its term expired (the offboarding waits at its gate), or it was offboarded."""


class StepRecord(Strict):
    name: str
    state: StepState
    started_at: datetime
    finished_at: datetime | None = None
    summary: str = ""
    error: str = Field(
        "",
        exclude_if=lambda error: not error,
        description="why the step failed: its error's type and message, or its blocking findings (empty: none)",
    )


class RunStatus(Strict):
    workflow: str
    target: str
    stage: str
    plan_hash: str | None = None
    plan: Plan | None = None
    gates: list[GateState] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    leftovers: list[Leftover] = Field(
        default_factory=list, description="objects a failed undo left; retry_rollback undoes them again"
    )
    approvals: list[Approval] = Field(
        default_factory=list, description="every gate answered so far: who, when, which plan hash"
    )
    message: str = ""
