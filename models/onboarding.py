"""Inputs, step payloads and results of the onboarding workflow (offboarding reuses its step payloads).

Every apply step of onboarding is one activity named ``<layer>.<step>`` that takes
a :class:`StepInput` and returns a :class:`StepResult`. Facts learned on the way
(chosen nodes, group gid, Weka uids) travel in :class:`Facts`, never secrets.
"""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.gates import Approval, approvals_excluded
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import EnsureResult, Finding
from tenantflow.models.status import RunOutcome
from tenantflow.models.tenant import TenantContract


class UserFacts(Strict):
    pk: int
    uid_number: int
    gid_number: int


class SmokeEvidence(Strict):
    """What one smoke check ran, on which nodes and with which figures, or why it was skipped: the handover
    sheet's evidence (runbook step 7)."""

    check: str = Field(..., description="the check it stands for, e.g. smoke.nccl or smoke.nccl.two_node")
    ran: str = Field(..., description="what ran, in the runbook's words; empty when skipped")
    state: str = Field(..., description="the job's final Slurm state, or SKIPPED")
    nodes: list[str] = Field(default_factory=list, description="the nodes the job ran on")
    job_id: int | None = None
    figures: dict[str, str] = Field(default_factory=dict, description="what it measured, by name")
    note: str = Field("", description="why it was skipped, or what the figures mean")


class Facts(Strict):
    """What earlier steps learned, for later steps. References only: no tokens or passwords."""

    nodes: list[str] = Field(default_factory=list)
    group_pk: str | None = None
    group_gid: int | None = None
    users: dict[str, UserFacts] = Field(default_factory=dict)
    weka_org_uid: str | None = None
    weka_filesystems: dict[str, str] = Field(default_factory=dict, description="role (home/scratch) -> fs uid")
    csi_secret: str | None = None
    smoke: dict[str, str] = Field(default_factory=dict)
    smoke_evidence: list[SmokeEvidence] = Field(
        default_factory=list,
        exclude_if=lambda evidence: not evidence,
        description="each smoke check's evidence for the handover, in the order they ran",
    )
    release_nodes: list[str] = Field(
        default_factory=list,
        exclude_if=lambda nodes: not nodes,
        description="a change that shrinks capacity: the tenant's nodes it drains and releases",
    )
    remove_users: list[str] = Field(
        default_factory=list,
        exclude_if=lambda users: not users,
        description="a change: usernames of the recorded contract the new one no longer lists",
    )
    """Written only when set (the smoke evidence too), so facts that do not use them encode as recorded histories
    hold them."""


class StepInput(Strict):
    contract: TenantContract
    facts: Facts = Facts()
    run_id: str = Field("", description="workflow id of the run, for idempotency keys and annotations")
    adoptions: list[PlanStep] = Field(
        default_factory=list,
        exclude_if=lambda lines: not lines,
        description="the approved plan's adopt lines of this apply step: the existing objects as the approver saw "
        "them; the step writes none of them that changed since, nor an existing account of no tenant without a line "
        "unless its email is the contract's (empty: none, or a run recorded before the check)",
    )


class StepResult(Strict):
    results: list[EnsureResult] = Field(default_factory=list)
    facts: Facts = Facts()
    findings: list[Finding] = Field(default_factory=list)


class UndoInput(Strict):
    """Compensation of one applied step: remove what it created, release what it adopted."""

    contract: TenantContract
    facts: Facts
    step: str
    results: list[EnsureResult]


class OnboardingInput(Strict):
    contract: TenantContract
    approval_escalate_after_s: int = Field(3600, ge=1, description="after this a waiting gate escalates")
    approval_expire_after_s: int = Field(7 * 24 * 3600, ge=1, description="after this the run gives up")


class Handover(Strict):
    markdown: str
    sheet: dict[str, object]
    capacity_contract: dict[str, object]
    approvals: list[Approval] = Field(default_factory=list, exclude_if=approvals_excluded)

    def with_approvals(self, approvals: list[Approval]) -> Handover:
        """The sheet with who approved what and when, in ``approvals`` and as the markdown's last section."""
        if not approvals:
            return self
        lines = "\n".join(f"- {approval.describe()}" for approval in approvals)
        markdown = f"{self.markdown.rstrip()}\n\n## Approvals\n\n{lines}\n"
        return self.model_copy(update={"approvals": approvals, "markdown": markdown})

    def with_waiver(self, waived: list[Finding], approval: Approval) -> Handover:
        """The sheet with the failed smoke checks ``approval`` accepted at ``smoke_failed`` (its comment the
        reason): in ``sheet["smoke_waived"]`` and as a markdown section, each check with its error and fix."""
        said = {"by": approval.describe(), "reason": approval.comment}
        entries = [f.model_dump(mode="json", include={"check", "message", "fix"}) | said for f in waived]
        lines = "\n".join(f"- {f.check}: {f.message}" + (f" (fix: {f.fix})" if f.fix else "") for f in waived)
        markdown = (
            f"{self.markdown.rstrip()}\n\n## Smoke checks waived\n\n{lines}\n\n"
            f"Waived ({approval.describe()}): {approval.comment}\n"
        )
        return self.model_copy(update={"sheet": {**self.sheet, "smoke_waived": entries}, "markdown": markdown})


class OnboardingResult(Strict):
    slug: str
    status: RunOutcome = Field(..., description="completed, or rejected at the plan gate; a run that fails raises")
    plan_hash: str | None = None
    plan: Plan | None = None
    applied: list[EnsureResult] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    handover: Handover | None = None
    approvals: list[Approval] = Field(default_factory=list, description="who answered which gate, when")
    message: str = ""
