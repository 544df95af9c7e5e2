"""Who may answer a gate, enforced by the worker: verified approvers and the four-eyes rule, between principals.

Temporal does not tell workflow code who sent an update (its server records no user identity on them), so the
approver is a name in the payload, and only a proof makes it more than a claim. :class:`Approvals` is a worker
interceptor that checks every gate answer (``approve_plan``, ``reject_plan``, each yes/no gate's update such as
``confirm_purge``, the older ``answer_gate``, the lifecycle's ``renew``; any update or signal carrying an
:class:`ApprovePlan`, :class:`RejectPlan`, :class:`GateAnswer` or :class:`RenewTerm`) in the update validator,
after the run's own validator (the gate is open, the hash current) and before the run sees it:

1. **Proof.** An answer with ``proof`` must carry an SSH signature of its own approval statement (namespace,
   workflow id, run id, gate, plan hash or, at ``smoke_failed``, the choice and the gate's opening, approver:
   :mod:`tenantflow.models.proofs`) by a key the allowed-signers file lists for the approver
   (:mod:`tenantflow.worker.signatures`); a proof for another run (a rerun of the same plan), gate, hash, choice or
   approver is refused. The run records the approver as *verified* (the key's fingerprint).
2. **Verified approvers.** Where ``TENANTFLOW_VERIFIED_APPROVERS`` covers the gate (by default every gate of
   onboarding, change, offboarding, decommission and the lifecycle's renew), an answer without proof (the Temporal
   UI, ``temporal workflow update``) is refused, naming how to approve; elsewhere it counts as *declared*.
   Rejections need no proof (they write nothing) and are recorded verified or declared alike.
3. **Four-eyes.** Where ``TENANTFLOW_FOUR_EYES`` covers the gate, the approver's principal
   (:mod:`tenantflow.worker.principals`) must be known and differ from that of the run's *verified* starter, or,
   for a renewal, of whoever asked for it (the workflow's ``requested_by(gate)``, counted only when its ``renew``
   carried a proof, which step 1 verified). The starter is the memo ``started_by``
   (:data:`models.gates.STARTED_BY_MEMO`), which any Temporal client can set to any name, so it counts only with the
   memo ``started_by_proof`` (:class:`models.proofs.StartProof`, written by :class:`starter.client.TenantflowClient`
   with a key): a signature of the start statement (namespace, workflow id, workflow type, starter, the digest of
   the run's input, issue time) by a key the allowed-signers file lists for the starter, issued within
   :data:`START_PROOF_WINDOW` of the run's start as Temporal records it (``workflow.info().workflow_start_time``),
   so that a proof copied from an earlier run of the same workflow id does not count, nor one copied into a run that
   replaced the proven one with another input (the interceptor keeps the input the run received, and the digest is
   computed of it). A run whose starter is missing, not a string, or only declared cannot be approved under the
   rule. An offboarding started by the tenant's lifecycle at expiry (its parent, as the Temporal server records it,
   is ``lifecycle/<slug>`` of the offboarding's own tenant) may be approved by any principal.

A refused update is never written to the history, so changing these settings changes no history. The signal forms
(``approve_plan_signal``, ``<gate>_signal``) cannot be refused: the same checks make the workflow ignore them, with
a warning; a check that raises anything else (a memo no check foresaw) refuses the update and makes the workflow
ignore the signal alike, never failing the workflow task. A signal is in the history and the checks run again when
it replays, so change the settings (or the allowed signers and principals) only while no run holds a signal they
would judge differently.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, timedelta

from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from tenantflow.models.gates import (
    STARTED_BY_MEMO,
    STARTED_BY_PROOF_MEMO,
    ApprovePlan,
    GateAnswer,
    RejectPlan,
    Requested,
    SmokeFailedAnswer,
)
from tenantflow.models.lifecycle import RenewTerm
from tenantflow.models.proofs import ApprovalStatement, Decision, StartProof, input_digest
from tenantflow.models.run_ids import lifecycle_id, tenant_of_run
from tenantflow.worker.principals import PRINCIPALS_ENV, IdentityMap
from tenantflow.worker.signatures import ALLOWED_SIGNERS_ENV, APPROVAL_KEY_ENV, AllowedSigners, ProofError, verify

GENERIC_UPDATES = ("answer_gate", "answer_gate_signal")
"""Updates and signals whose first argument names the gate."""
Payload = ApprovePlan | RejectPlan | GateAnswer | RenewTerm
START_PROOF_WINDOW = timedelta(minutes=5)
"""How far a start proof's issue time may lie from the run's start as Temporal records it: a proof copied from an
earlier run of the same workflow id into a later run is refused."""
HOW_TO_START = (
    f"start runs with tenantflow with {APPROVAL_KEY_ENV} set to the starter's SSH key (listed for them in the "
    f"worker's {ALLOWED_SIGNERS_ENV}), or through the HTTP API, so that another person can approve them"
)


@dataclass(frozen=True)
class GateAnswerSeen:
    """A gate answer as the checks see it: which gate, what it signs for, and its payload."""

    gate: str
    plan: str
    decision: Decision
    payload: Payload


def answer_in(name: str, args: Collection[object]) -> GateAnswerSeen | None:
    """The gate answer the update or signal ``name`` carries (None: not a gate answer)."""
    for arg in args:
        if isinstance(arg, ApprovePlan):
            return GateAnswerSeen("approve_plan", arg.plan_hash, "approve", arg)
        if isinstance(arg, RejectPlan):
            return GateAnswerSeen("approve_plan", "", "reject", arg)
        if isinstance(arg, RenewTerm):
            return GateAnswerSeen("renew", f"days={arg.days}", "request", arg)
        if isinstance(arg, GateAnswer):
            first = next(iter(args))
            gate = str(first) if name in GENERIC_UPDATES else name.removesuffix("_signal")
            return GateAnswerSeen(gate, arg.signed if isinstance(arg, SmokeFailedAnswer) else "", "approve", arg)
    return None


@dataclass(frozen=True)
class GatePolicy:
    """Workflow types (``TenantOnboarding``) and single gates (``TenantOffboarding.confirm_purge``) a rule holds for."""

    entries: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, setting: str) -> GatePolicy:
        return cls(frozenset(entry.strip() for entry in setting.split(",") if entry.strip()))

    def covers(self, workflow_type: str, gate: str) -> bool:
        return workflow_type in self.entries or f"{workflow_type}.{gate}" in self.entries

    @property
    def workflow_types(self) -> frozenset[str]:
        return frozenset(entry.partition(".")[0] for entry in self.entries)


@dataclass(frozen=True)
class ApprovalRules:
    """What the worker requires of gate answers."""

    four_eyes: GatePolicy = GatePolicy()
    verified: GatePolicy = GatePolicy()
    identities: IdentityMap = field(default_factory=IdentityMap)
    signers: AllowedSigners | None = None

    def names(self, identity: str) -> list[str]:
        """What allowed-signers principals are matched against for ``identity``: its principal, then itself."""
        principal = self.identities.principal(identity)
        return [principal, identity] if principal and principal != identity.casefold() else [identity]

    def check(self, workflow_type: str, seen: GateAnswerSeen, input_sha256: str | None = None) -> None:
        """Raise ``ValueError`` saying why the answer ``seen`` does not count; ``input_sha256`` is the digest of the
        input the run received (None: not seen yet), which a start proof must sign."""
        info = workflow.info()
        approver = seen.payload.approver
        if seen.payload.proof is not None:
            statement = ApprovalStatement(
                namespace=info.namespace,
                workflow_id=info.workflow_id,
                run_id=info.run_id,
                gate=seen.gate,
                plan=seen.plan,
                approver=approver,
                decision=seen.decision,
            )
            verify(seen.payload.proof, statement, self.signers, self.names(approver), workflow.now())
        elif seen.decision != "reject" and self.verified.covers(workflow_type, seen.gate):
            raise ValueError(declared_refusal(workflow_type, seen.gate, approver, info.workflow_id))
        if seen.decision == "approve" and self.four_eyes.covers(workflow_type, seen.gate):
            self.check_four_eyes(approver, self.requester(seen.gate, input_sha256))

    def check_four_eyes(self, approver: str, requester: Requester) -> None:
        """Raise when ``approver`` is no principal, or the principal of ``requester``, or ``requester`` is not shown
        to be who started the run (or asked for the renewal)."""
        if requester.name is None:
            raise ValueError(
                f"four-eyes rule: this run does not record who started it (memo {STARTED_BY_MEMO!r} is missing or not "
                f"a string); {HOW_TO_START}"
            )
        mine = self.identities.principal(approver)
        if mine is None:
            raise ValueError(
                f"four-eyes rule: {approver!r} is no principal of the identity map ({PRINCIPALS_ENV}), so it cannot "
                "be told apart from the run's starter; add it to its principal's identities there"
            )
        if requester.by_parent:
            return
        if requester.unverified:
            raise ValueError(f"four-eyes rule: {requester.unverified}")
        started_by = requester.name
        theirs = self.identities.principal(started_by)
        if theirs is None:
            raise ValueError(
                f"four-eyes rule: this run's starter {started_by!r} is no principal of the identity map "
                f"({PRINCIPALS_ENV}), so no approver can be shown to be someone else; add it there"
            )
        if mine == theirs:
            raise ValueError(
                f"four-eyes rule: {started_by!r} started this run and cannot approve it ({approver!r} is the same "
                f"principal, {mine!r}); another person must approve"
            )

    def requester(self, gate: str, input_sha256: str | None = None) -> Requester:
        """Whom the four-eyes rule keeps from approving ``gate``: whoever the workflow says asked for it (its
        ``requested_by(gate)``, the lifecycle's renewal), else the run's starter."""
        asked: Callable[[str], Requested | None] | None = getattr(workflow.instance(), "requested_by", None)
        named = asked(gate) if asked is not None else None
        if named is None:
            return self.starter(input_sha256)
        if named.verified_by:
            return Requester(named.by)
        return Requester(
            named.by,
            unverified=f"the renewal was asked for by {named.by!r} without proof, so who asked is only declared; ask "
            f"for renewals with `tenantflow renew` with {APPROVAL_KEY_ENV} set, or through the HTTP API",
        )

    def starter(self, input_sha256: str | None = None) -> Requester:
        """The run's starter (memo ``started_by``) and whether it is verified: the tenant's lifecycle as the parent
        the Temporal server names, or proven by the memo ``started_by_proof`` for the input of digest
        ``input_sha256`` (this module's docstring)."""
        info = workflow.info()
        declared = memo_text(STARTED_BY_MEMO)
        if declared is None:
            return Requester(None)
        if info.parent is not None and declared == info.parent.workflow_id and started_by_lifecycle(info):
            return Requester(declared, by_parent=True)
        unverified = (
            f"this run's starter {declared!r} is only declared (memo {STARTED_BY_MEMO!r}, which any Temporal client "
            "can set)"
        )
        try:
            start = StartProof.model_validate(memo_value(STARTED_BY_PROOF_MEMO))
        except ValidationError:
            return Requester(
                declared, f"{unverified}, without a start proof (memo {STARTED_BY_PROOF_MEMO!r}); {HOW_TO_START}"
            )
        if input_sha256 is None:
            return Requester(
                declared, f"{unverified}: its start proof cannot be checked before the run has its input; try again"
            )
        if start.input_sha256 != input_sha256:
            return Requester(
                declared,
                f"{unverified}: its start proof is for another input (sha256 {start.input_sha256 or 'not stated'}) "
                f"than this run was started with (sha256 {input_sha256}), as when a proven start is copied into a run "
                f"that replaced it; {HOW_TO_START}",
            )
        statement = start.statement(info.namespace, info.workflow_id, info.workflow_type, declared, input_sha256)
        try:
            verify(start.proof, statement, self.signers, self.names(declared), info.workflow_start_time)
            issued, started = start.issued_at.astimezone(UTC), info.workflow_start_time.astimezone(UTC)
        except (ProofError, ValueError, ArithmeticError) as refused:
            return Requester(declared, f"{unverified}: its start proof does not count ({refused}); {HOW_TO_START}")
        if abs(issued - started) > START_PROOF_WINDOW:
            return Requester(
                declared,
                f"{unverified}: its start proof was issued at {issued:%Y-%m-%d %H:%M:%S}Z, not within "
                f"{START_PROOF_WINDOW} of this run's start ({started:%Y-%m-%d %H:%M:%S}Z), so it was made for another "
                f"run (or the starting client's clock is off); {HOW_TO_START}",
            )
        return Requester(declared)


@dataclass(frozen=True)
class Requester:
    """Whom the four-eyes rule compares an approver with: the run's starter or a renewal's requester."""

    name: str | None
    """None: the run does not record a starter (no memo ``started_by``, or one that is not a string)."""
    unverified: str = ""
    """Why ``name`` is not shown to be who started the run (or asked); empty: it is."""
    by_parent: bool = False
    """Started by its parent workflow (named by the Temporal server): any principal may approve."""


def started_by_lifecycle(info: workflow.Info) -> bool:
    """Whether the run's parent (as the Temporal server records it) is the lifecycle of the run's own tenant: the
    offboarding a lifecycle starts at expiry. Any other parent (a workflow anyone started on a queue of their own)
    exempts nothing."""
    slug = tenant_of_run(info.workflow_id)
    return info.parent is not None and slug is not None and info.parent.workflow_id == lifecycle_id(slug)


def memo_value(key: str) -> object:
    """The memo ``key`` as its JSON decodes (None: absent, or a payload that does not decode), never raising: the
    memo is whatever the starting client wrote, and a workflow task must not fail on it."""
    try:
        return workflow.memo_value(key, None)
    except (ApplicationError, ValueError, TypeError, RuntimeError):
        return None


def memo_text(key: str) -> str | None:
    """The memo ``key`` when it is a string (a number set with ``temporal workflow start --memo`` is none)."""
    value = memo_value(key)
    return value if isinstance(value, str) else None


def declared_refusal(workflow_type: str, gate: str, approver: str, workflow_id: str) -> str:
    """Why an answer without proof is refused, and how to answer properly."""
    if gate == "renew":  # asked for by tenant, not answered by run
        command = f"tenantflow renew {tenant_of_run(workflow_id) or 'SLUG'} --days N"
    else:
        command = f"tenantflow {'approve' if gate == 'approve_plan' else gate.replace('_', '-')} {workflow_id} ..."
    return (
        f"{gate} of {workflow_type} needs a verified approver, and this answer carries no proof: {approver!r} is only "
        "declared (the Temporal UI and `temporal workflow update` cannot prove who sends them). Answer with "
        f"`{command}` "
        f"with {APPROVAL_KEY_ENV} set to your SSH key (listed for you in the worker's {ALLOWED_SIGNERS_ENV}), or "
        "through the HTTP API; or let declared approvers count for this gate by removing it from "
        "TENANTFLOW_VERIFIED_APPROVERS"
    )


class Approvals(Interceptor):
    """Check every gate answer against ``rules`` (this module's docstring)."""

    def __init__(self, rules: ApprovalRules) -> None:
        self.rules = rules

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        rules = self.rules

        class Inbound(WorkflowInboundInterceptor):
            """One per workflow run: it keeps the digest of the input the run received, which start proofs bind."""

            input_sha256: str | None = None
            """The digest of the run's input (None until the run starts, or when its input is no model)."""

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> object:
                if len(input.args) == 1 and isinstance(input.args[0], BaseModel):
                    self.input_sha256 = input_digest(input.args[0])
                return await super().execute_workflow(input)

            def check(self, name: str, args: Collection[object]) -> None:
                seen = answer_in(name, args)
                if seen is not None:
                    rules.check(workflow.info().workflow_type, seen, self.input_sha256)

            def handle_update_validator(self, input: HandleUpdateInput) -> None:
                super().handle_update_validator(input)  # the run's own checks first: the gate open, the hash current
                self.check(input.update, input.args)

            async def handle_signal(self, input: HandleSignalInput) -> None:
                try:
                    self.check(input.signal, input.args)
                except Exception as refused:  # whatever a check raises, the task must not fail: ignore the signal
                    workflow.logger.warning("ignored signal %s: %s", input.signal, refused)
                    return
                await super().handle_signal(input)

        return Inbound
