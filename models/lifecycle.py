"""The contract's term as a durable timer: ``TenantLifecycle``'s input, its ``renew`` update, notices and state.

One lifecycle run per tenant (workflow id :func:`tenantflow.models.run_ids.lifecycle_id`) lives until the term
ends; it sends a :class:`TermNotice` through the notifier before the end (reminders at ``reminder_days`` days before
it), on each renewal and at expiry, when it starts the tenant's offboarding, which waits at its plan gate.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.gates import APPROVER_PATTERN, proof_field
from tenantflow.models.status import TermOutcome
from tenantflow.models.tenant import TenantContract

DEFAULT_REMINDER_DAYS = (30, 7, 1)
"""Days before the term's end a reminder goes out, unless the worker's TENANTFLOW_TERM_REMINDER_DAYS says
otherwise."""
MAX_RENEW_DAYS = 3650
"""The longest single renewal, as ``capacity.term_days`` allows for a whole term."""


OFFBOARDED_SIGNAL = "tenant_offboarded"
"""What a completed offboarding signals the tenant's lifecycle (argument: the offboarding's workflow id): it ends."""


def renew_days_problem(days: int) -> str | None:
    """Why ``days`` cannot renew a term (None when it can): the ``renew`` validator's and the API's message."""
    if 1 <= days <= MAX_RENEW_DAYS:
        return None
    return f"days={days}: a renewal adds 1 to {MAX_RENEW_DAYS} days to the term; pass a positive number, e.g. 90"


class Renewal(Strict):
    """One renewal that moved the end: by how much, approved by whom (and, for a renewal that waited at the gate, asked
    for by whom, and whether its approver was verified), when, and the term's end it set."""

    days: int
    approver: str
    comment: str = ""
    at: datetime
    term_end: datetime
    requested_by: str = Field(
        "", exclude_if=lambda who: not who, description="who asked for it (empty: it was not gated)"
    )
    verified_by: str = Field(
        "", exclude_if=lambda key: not key, description="the key that proved the approver; empty: declared"
    )


class PendingRenewal(Strict):
    """A ``renew`` waiting at the lifecycle's ``approve_plan`` gate for another person's approval."""

    days: int
    requested_by: str
    comment: str = ""
    at: datetime
    plan_hash: str = Field(..., description="what approve_plan (or reject_plan) answers, as for a plan")
    verified_by: str = Field("", exclude_if=lambda key: not key, description="the key that proved the requester")

    @staticmethod
    def hash_of(days: int, requested_by: str, at: datetime) -> str:
        """The renewal's hash, like a plan's content hash (an approval's proof binds the lifecycle's run besides)."""
        body = f"{days}|{requested_by}|{at.isoformat()}"
        return hashlib.sha256(body.encode()).hexdigest()[:16]


class LifecycleInput(Strict):
    """What a lifecycle run starts from (a continue-as-new carries everything forward)."""

    contract: TenantContract
    term_end: datetime = Field(..., description="when the term ends (UTC): onboarding's completion + term_days")
    reminder_days: list[int] | None = Field(
        None, description="days before the end to remind; unset: the worker's TENANTFLOW_TERM_REMINDER_DAYS"
    )
    reminders_done: list[int] | None = Field(
        None, description="offsets already sent (or already past) for this term_end; unset: those already past"
    )
    renewals: list[Renewal] = Field(default_factory=list)
    pending_renewal: PendingRenewal | None = Field(
        None, exclude_if=lambda pending: pending is None, description="a renewal waiting for approval"
    )


class RenewTerm(Strict):
    """The ``renew`` update's payload; the update's validator refuses ``days`` < 1 or > 3650 with the reason."""

    days: int = Field(
        ...,
        description=f"days to add to the term's end, 1 to {MAX_RENEW_DAYS}",
        json_schema_extra={"minimum": 1, "maximum": MAX_RENEW_DAYS},  # the validator refuses others, with the reason
    )
    approver: str = Field(
        "operator",
        min_length=1,
        max_length=200,
        pattern=APPROVER_PATTERN,
        description="who renews: the HTTP API's token user or the Temporal client's identity, never free text",
    )
    comment: str = Field("", max_length=1000)
    proof: str | None = proof_field()


NoticeKind = Literal["term.reminder", "term.renewed", "term.expired"]


class TenantRunWait(Strict):
    """What ``lifecycle.wait_tenant_run`` waits for at expiry: the tenant's onboarding or change run to close."""

    workflow_id: str = Field(..., description="the tenant's run id, tenant/<slug> (an onboarding or a change)")
    wait_s: int = Field(..., ge=0, description="the longest wait; the run may still be running after it")


class TenantRunSeen(Strict):
    """What ``lifecycle.wait_tenant_run`` saw: whether it waited, and whether the run still runs after the wait."""

    workflow_id: str
    waited: bool = Field(False, description="the run was running when the wait began")
    running: bool = Field(False, description="the run was still running when the wait ended")
    workflow_type: str = Field("", description="TenantOnboarding or TenantChange; empty: no such run")


class TermNotice(Strict):
    """What the notifier posts (as JSON) to the webhook."""

    event: NoticeKind
    tenant: str
    workflow_id: str
    term_end: datetime
    days_left: int = Field(..., description="whole days from now to term_end (0 at expiry)")
    message: str


class NoticeSent(Strict):
    """Whether the notifier delivered a notice (``delivered`` false: no webhook is configured)."""

    delivered: bool
    status: int | None = Field(None, description="the webhook's HTTP status")
    detail: str = ""


class TermStatus(Strict):
    """The ``term`` query: where the tenant's term stands."""

    tenant: str
    stage: str = Field(..., description="term:running, term:expired or term:offboarded")
    term_end: datetime
    reminder_days: list[int] = Field(default_factory=list)
    reminders_done: list[int] = Field(default_factory=list)
    renewals: list[Renewal] = Field(default_factory=list)
    pending_renewal: PendingRenewal | None = Field(
        None,
        exclude_if=lambda pending: pending is None,
        description="a renewal waiting at approve_plan for another person's approval",
    )
    offboarding: str = Field("", description="workflow id of the offboarding started at expiry")
    notices: list[TermNotice] = Field(default_factory=list, description="notices this run sent")


class LifecycleResult(Strict):
    tenant: str
    status: TermOutcome = Field(
        ...,
        description="expired: the term ended and offboarding waits at its plan gate; offboarded: an offboarding "
        "completed before the end",
    )
    term_end: datetime
    offboarding: str
    message: str = ""
