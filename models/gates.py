"""Payloads of the human gates (updates and signals) and what a run reports about them.

Every gate answer may carry ``proof``: an SSH signature over the :class:`~tenantflow.models.proofs.ApprovalStatement`
of exactly that answer (:mod:`tenantflow.models.proofs`). The worker verifies it before the run sees the answer; the
run records the signing key's fingerprint as :attr:`Approval.verified_by`, and an answer without proof as
*declared*: the approver is only the name the caller wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, Field, model_validator

from tenantflow.models.base import Strict
from tenantflow.models.proofs import proof_fingerprint

STARTED_BY_MEMO = "started_by"
"""The memo key holding the identity that started a run (what the four-eyes rule compares approvers with)."""
STARTED_BY_PROOF_MEMO = "started_by_proof"
"""The memo key holding the :class:`~tenantflow.models.proofs.StartProof` of ``started_by``: without it (or with one
that does not verify) the starter is only declared, and the four-eyes rule refuses every approval of the run."""
APPROVER_PATTERN = r"^[A-Za-z0-9@._ =,/:+-]+$"
"""An approver: a token's user name, a Temporal client identity (``user@host``) or a certificate subject."""
Established = Literal["verified", "declared"]


@dataclass(frozen=True)
class Requested:
    """Who asked for what a gate answers (a lifecycle's renewal), as a workflow's ``requested_by(gate)`` reports it
    to the four-eyes rule: the name, and the fingerprint of the key that proved it (empty: only declared)."""

    by: str
    verified_by: str = ""


def proof_field() -> Any:
    """The ``proof`` field of a gate payload: absent (and left out of the payload) when the answer has none."""
    return Field(
        None,
        max_length=4000,
        exclude_if=lambda proof: proof is None,
        description="an armored SSH signature of the answer's approval statement (`tenantflow approve` makes it); "
        "without one the approver is only declared",
    )


class ApprovePlan(Strict):
    plan_hash: str = Field(..., pattern=r"^[0-9a-f]{16}$", description="the hash shown by `status`")
    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)
    comment: str = Field("", max_length=1000)
    proof: str | None = proof_field()


class RejectPlan(Strict):
    reason: str = Field(
        ...,
        min_length=1,
        max_length=1000,
        pattern=r"\S",
        description="why the plan is rejected: not blank (surrounding whitespace is dropped)",
    )
    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)
    proof: str | None = proof_field()


class GateAnswer(Strict):
    """Approval of a yes/no gate (resume submissions, uncordon, approve adoption, purge data)."""

    approver: str = Field("operator", min_length=1, max_length=200, pattern=APPROVER_PATTERN)
    comment: str = Field("", max_length=1000)
    proof: str | None = proof_field()


SmokeChoice = Literal["rerun", "rollback", "waive"]
"""The answers to ``smoke_failed``: run the smoke checks again (after a fix), roll the tenant back, or accept the
failures with a reason the handover sheet records."""


class SmokeFailedAnswer(GateAnswer):
    """The answer to ``smoke_failed``: a :class:`GateAnswer` and what to do; ``comment`` is the reason (a waiver
    needs one). The proof signs the choice and the gate's opening (:attr:`signed`), so a signature for a re-run never
    waives, and one made for an earlier opening (read from the run's history once the gate opens again after a
    re-run) answers nothing."""

    choice: SmokeChoice = Field(
        "rerun",
        description="rerun: the smoke checks again, after the node or chart is fixed; rollback: undo the tenant; "
        "waive: accept the failures (comment: the reason, recorded on the handover sheet)",
    )
    opened_at: AwareDatetime | None = Field(
        None,
        exclude_if=lambda at: at is None,
        description="when the smoke_failed gate this answers opened (status lists it): the answer counts only for "
        "that opening, the failures it showed; needed with a proof, which signs it",
    )

    @model_validator(mode="after")
    def _waiver_has_a_reason(self) -> SmokeFailedAnswer:
        if self.choice == "waive" and not self.comment:
            raise ValueError("a waiver needs a reason: say in comment why the failed smoke checks are accepted")
        return self

    @property
    def signed(self) -> str:
        """What the approval statement's ``plan`` says for this answer: the choice and the opening it answers."""
        opening = f" opened_at={self.opened_at.isoformat()}" if self.opened_at else ""
        return f"choice={self.choice}{opening}"


class Approval(Strict):
    """One answer to a gate as the run recorded it: who, how that was established (verified by a signature the
    worker checked, or declared), when, and for ``approve_plan`` the plan hash approved (or the rejection)."""

    gate: str
    approver: str
    at: datetime
    approved: bool = Field(True, description="False: reject_plan answered approve_plan")
    plan_hash: str | None = None
    comment: str = ""
    verified_by: str = Field(
        "",
        exclude_if=lambda key: not key,
        description="fingerprint of the SSH key whose signature of this answer the worker verified; "
        "empty: the approver is declared (a payload without proof: the Temporal UI, `temporal workflow update`)",
    )

    @property
    def established(self) -> Established:
        return "verified" if self.verified_by else "declared"

    def describe(self) -> str:
        """One line; a verified approver with the key that proved it (a declared one as runs recorded it before
        proofs existed, so the handover sheets they pass on replay unchanged)."""
        what = f"{self.gate} {'approved' if self.approved else 'rejected'}"
        plan = f" (plan {self.plan_hash})" if self.plan_hash else ""
        how = f" (verified, key {self.verified_by})" if self.verified_by else ""
        return f"{what}{plan} by {self.approver}{how} at {self.at:%Y-%m-%d %H:%M:%S}Z"

    def describe_established(self) -> str:
        """:meth:`describe`, saying ``declared`` too: for what people read (status, result), not for records."""
        return self.describe() if self.verified_by else f"{self.describe()} (declared)"


def recorded_approval(
    gate: str, answer: GateAnswer, at: datetime, plan_hash: str | None = None, approved: bool = True
) -> Approval:
    """The :class:`Approval` a run records for ``answer``, verified by the key of its proof when it has one."""
    return Approval(
        gate=gate,
        approver=answer.approver,
        at=at,
        approved=approved,
        plan_hash=plan_hash,
        comment=answer.comment,
        verified_by=proof_fingerprint(answer.proof),
    )


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


GateEvent = Literal["opened", "deadline", "escalated"]
"""What a gate notification tells: the gate opened, its expiry is near, or it escalated (no answer in time)."""


class GateNotice(Strict):
    """What a gated run tells people about one of its gates, through the notifier webhook (``gates.notify``): which
    run, which gate, what happened, and the exact commands that answer it (the gate's ``how_to_answer``). The
    namespace is the activity's own (a replay runs in another one, and the arguments must replay unchanged)."""

    event: GateEvent
    workflow_type: str
    workflow_id: str
    run_id: str
    gate: str
    opening: int = Field(..., ge=1, description="which opening of the gate in this run (a gate opened again: 2, ...)")
    description: str
    how_to_answer: list[str]
    opened_at: datetime
    escalates_at: datetime | None = Field(None, description="when it escalates; None: a gate that does not")
    expires_at: datetime = Field(
        ..., description="when the gate's wait ends unanswered (a run's gate: GateExpired; a renewal: the term's end)"
    )
