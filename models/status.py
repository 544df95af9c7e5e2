"""What the ``status`` query of every run answers: stage, plan, gates, steps, findings."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.gates import Approval, GateState
from tenantflow.models.plan import Plan
from tenantflow.models.results import Finding
from tenantflow.models.rollback import Leftover


class StepRecord(Strict):
    name: str
    state: str = Field(..., description="running, done, failed, undone")
    started_at: datetime
    finished_at: datetime | None = None
    summary: str = ""


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
