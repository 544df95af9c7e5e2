"""Payloads of the human gates (updates and signals) and what a run reports about them."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from tenantflow.models.base import Strict

STARTED_BY_MEMO = "started_by"
"""The memo key holding the identity that started a run (what the four-eyes rule compares approvers with)."""
APPROVER_PATTERN = r"^[A-Za-z0-9@._ =,/:+-]+$"
"""An approver: a token's user name, a Temporal client identity (``user@host``) or a certificate subject."""


class ApprovePlan(Strict):
    plan_hash: str = Field(..., pattern=r"^[0-9a-f]{16}$", description="the hash shown by `status`")
    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)
    comment: str = Field("", max_length=1000)


class RejectPlan(Strict):
    reason: str = Field(..., min_length=1, max_length=1000)
    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)


class GateAnswer(Strict):
    """Approval of a yes/no gate (resume submissions, uncordon, approve adoption, purge data)."""

    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)
    comment: str = Field("", max_length=1000)


class Approval(Strict):
    """One answer to a gate as the run recorded it: who (the identity the caller authenticated as), when, and
    for ``approve_plan`` the plan hash approved (or the rejection)."""

    gate: str
    approver: str
    at: datetime
    approved: bool = Field(True, description="False: reject_plan answered approve_plan")
    plan_hash: str | None = None
    comment: str = ""

    def describe(self) -> str:
        what = f"{self.gate} {'approved' if self.approved else 'rejected'}"
        plan = f" (plan {self.plan_hash})" if self.plan_hash else ""
        return f"{what}{plan} by {self.approver} at {self.at:%Y-%m-%d %H:%M:%S}Z"


def approvals_excluded(approvals: list[Approval]) -> bool:
    """Leave an empty approvals list out of a serialized model, so runs recorded before approvals were stamped
    pass the same activity arguments on replay."""
    return not approvals


class GateState(Strict):
    name: str
    description: str
    opened_at: datetime
    how_to_answer: list[str]
    escalated: bool = False
