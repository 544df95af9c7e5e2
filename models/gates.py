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


class GateState(Strict):
    name: str
    description: str
    opened_at: datetime
    how_to_answer: list[str]
    escalated: bool = False
