"""``WorkerEnrollment``: the enroll-worker-cluster runbook (greenfield and brownfield) as a gated workflow.

Preflight (endpoints, the three permission checks, unique name) fails before any write; the install plan waits
for ``approve_plan`` with its hash (planned again right before the first write: a changed plan opens the gate
again); one step (``konduktor.bootstrap``, patch ``konduktor-cli-bootstrap``) runs ``konduktor cluster
enroll`` and ``konduktor worker bootstrap``, so the one-shot blob never leaves the worker host (runs recorded
before the patch created the enrollment and installed the agent themselves), and the plan it prints is answered only
once approved at ``approve_plan`` (``workflows/bootstrap_gate.py``); the four conditions are awaited
with durable polling, and each one that does not converge yields the runbook's troubleshooting finding
(``workflows/condition_findings.py``).
Brownfield adds the invariants, ``submissions_paused``, an immediate cordon (a WorkerCluster that does not
appear or cannot be cordoned stops the run at ``stopped-not-cordoned`` with submissions still paused and a
finding saying what to do; nothing is skipped), convergence with invariant checks, the adoption diff and
``approve_adoption``, ``uncordon``, a canary (with ``canary_exact_routing`` the other dispatch-ready pool
members are cordoned for it and uncordoned right after) and ``resume_submissions``. A failure removes what the
run installed (every planned create, even when bootstrap stopped half-way) and the enrollment record; a broken
invariant (found by the ``InvariantBroken`` type anywhere in the failure chain) keeps the worker cordoned and
adopts nothing. The gate handlers are the shared ones (``workflows/gate_handlers.py``), bound with enrollment's
texts.

Failure paths (``workflows/enrollment_failures.py``): once the worker has been uncordoned it may run work, so
a later failure, an expired gate or a cancel never tears it down: it is cordoned again (unless its canary
passed) and the run ends leaving it enrolled, with a finding that says what to do. Before that, a cancel rolls
back like a failure, and the rollback keeps going past a failing step and lists what it left in ``status``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_steps import (
        HUB_CANARY,
        HUB_CORDON,
        HUB_CORDON_POOL,
        HUB_CREATE_ENROLLMENT,
        HUB_DESTROY_KEY,
        HUB_PREFLIGHT,
        HUB_SELECT_PRESET,
        HUB_WAIT_CONDITIONS,
        HUB_WAIT_WORKERCLUSTER,
        RECORD_WORKERCLUSTER,
        WORKER_ADOPT,
        WORKER_ADOPTION_DIFF,
        WORKER_CHECK_INVARIANTS,
        WORKER_INSTALL,
        WORKER_PLAN,
        WORKER_RECORD_INVARIANTS,
        WORKER_VERIFY_UIDS,
        WORKER_WAIT_CONVERGENCE,
    )
    from tenantflow.models.enrollment_workflows import (
        ADOPTION_REFUSAL,
        AdoptionDiff,
        BootstrapAnswer,
        BootstrapPlanPrinted,
        ConditionReport,
        ConditionWait,
        Cordon,
        EnrollmentFacts,
        EnrollmentInput,
        EnrollmentResult,
        EnrollmentStep,
    )
    from tenantflow.models.gates import GateAnswer
    from tenantflow.models.plan import Plan
    from tenantflow.models.records import WorkerClusterRecord
    from tenantflow.models.results import EnsureResult, Finding, Outcome

from tenantflow.workflows.bootstrap_gate import BootstrapGate
from tenantflow.workflows.condition_findings import observability, troubleshoot
from tenantflow.workflows.enrollment_cordon import CORDON_BESIDE_BOOTSTRAP_PATCH, cordon_beside, stop_unless_cordoned
from tenantflow.workflows.enrollment_failures import (
    CANARY_PASSED,
    CANCEL_PATCH,
    EnrollmentFailures,
    application_error,
    with_facts,
)
from tenantflow.workflows.gate_handlers import GatedWorkflow, answer_gate_update, approve_plan_update, yes_no_gate
from tenantflow.workflows.records import WORKER_RECORD_PATCH, Records
from tenantflow.workflows.rollback import RETRY_ROLLBACK, retry_rollback_gate
from tenantflow.workflows.saga import root_message
from tenantflow.workflows.search import WORKER_CLUSTER

KONDUKTOR_PATCH = "konduktor-cli-bootstrap"
"""Runs from before it created the enrollment itself (``hub.create_enrollment`` + ``worker.install``)."""
BROWNFIELD_GATES = ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions")
YES_NO_GATES = (*BROWNFIELD_GATES, RETRY_ROLLBACK)


@workflow.defn(name="WorkerEnrollment")
class WorkerEnrollmentWorkflow(GatedWorkflow):
    WORKFLOW = "WorkerEnrollment"
    YES_NO_GATES = YES_NO_GATES
    approve_plan = approve_plan_update(
        "Approve the bootstrap plan by its exact hash (payload "
        '{"plan_hash": "..."}); the one-shot enrollment is created',
        answer="plan {plan_hash} approved",
    )
    answer_gate = answer_gate_update(
        'Older form of the gate updates: args [gate, {"approver": '
        '"..."}] with gate one of ' + ", ".join(YES_NO_GATES) + "; prefer the update named for the gate"
    )
    retry_rollback, retry_rollback_signal = retry_rollback_gate()

    submissions_paused, submissions_paused_signal = yes_no_gate(
        "submissions_paused",
        "Confirm every Hub submission path of the organization is paused (brownfield); the worker is cordoned next",
    )
    approve_adoption, approve_adoption_signal = yes_no_gate(
        "approve_adoption", "Approve adopting the preset objects whose diff is empty (see the adoption_diff query)"
    )
    uncordon, uncordon_signal = yes_no_gate("uncordon", "Recorded work is verified: enable Hub dispatch to the worker")
    resume_submissions, resume_submissions_signal = yes_no_gate(
        "resume_submissions", "The canary passed: resume the organization's submission paths"
    )

    def __init__(self) -> None:
        super().__init__()
        self.records = Records(self.state)
        self.failures = EnrollmentFailures(self.state)
        self._report = ConditionReport()
        self._diff: AdoptionDiff | None = None
        self._live: str | None = None
        """None until the worker is uncordoned, then ``uncordoned`` or ``canary passed``."""
        self.bootstrap_gate = BootstrapGate(self.state)

    @workflow.run
    async def run(self, params: EnrollmentInput) -> EnrollmentResult:
        c = params.contract
        self._params = params
        self.state.target = self.state.steps.target = f"{c.tenant_namespace}/{c.worker_name}"
        self.state.gates.label(WORKER_CLUSTER, c.worker_name)
        step = EnrollmentStep(contract=c, facts=EnrollmentFacts(enrollment_id=workflow.info().workflow_id))

        self.state.gates.set_stage("preflight", "Checking both endpoints and permissions; nothing is written")
        self.state.findings += await self.state.steps.run(HUB_PREFLIGHT, step)
        errors = [f for f in self.state.findings if not f.ok]
        if errors:
            self.state.gates.set_stage("preflight-failed", "Preflight failed; nothing was written")
            raise ApplicationError(
                "preflight failed, nothing was written: "
                + "; ".join(f"{f.check}: {f.message} (fix: {f.fix})" for f in errors),
                type="PreflightFailed",
                non_retryable=True,
            )

        if c.brownfield:
            invariants = await self.state.steps.run(WORKER_RECORD_INVARIANTS, step)
            step = with_facts(step, invariants=invariants)

        planned = step
        plan = await self._bootstrap_plan(planned)
        approved = await self.state.wait_plan_approval(plan, *self._gate_times())
        if approved and c.brownfield:
            await self._gate("submissions_paused", "pause every Hub submission path for the organization")
        if approved:
            approved, plan = await self.state.reapprove_if_changed(
                plan, lambda: self._bootstrap_plan(planned), *self._gate_times()
            )
        if not approved:
            self.state.gates.set_stage("rejected", "The bootstrap plan was rejected; nothing was written")
            return EnrollmentResult(
                worker=self.state.target,
                status="rejected",
                plan_hash=plan.plan_hash,
                findings=self.state.findings,
                approvals=self.state.gates.approvals,
                message=f"rejected: {self.state.rejected.reason if self.state.rejected else ''}",
            )

        self._step, self._plan = step, plan
        try:
            step = await self._enroll(step)
        except (ActivityError, ApplicationError) as err:
            cause = application_error(err)
            if cause is not None and cause.type == "CordonFailed":
                raise
            if cause is not None and cause.type == "InvariantBroken":
                fix = (
                    "the worker stays cordoned and nothing was adopted; find out what changed the recorded work "
                    "before enrolling again"
                )
                self.state.findings.append(Finding.failed("invariants", cause.message, fix))
                self.state.gates.set_stage("stopped-invariant", f"Stopped, worker stays cordoned: {cause.message}")
                raise
            await self._after_failure(plan, err)
            raise
        except asyncio.CancelledError as err:
            if workflow.patched(CANCEL_PATCH):
                await self._after_failure(plan, err)
            raise
        if workflow.patched(WORKER_RECORD_PATCH):
            record = WorkerClusterRecord(
                contract=c, run=self.records.stamp(), installed=step.facts.installed, adopted=step.facts.adoption
            )
            await self.records.store(RECORD_WORKERCLUSTER, record)
        self.state.findings += observability(self._report)
        self.state.gates.set_stage("completed", f"{self.state.target} enrolled; all four conditions True")
        return EnrollmentResult(
            worker=self.state.target,
            status="completed",
            plan_hash=plan.plan_hash,
            conditions=self._report.conditions,
            installed=step.facts.installed,
            adopted=step.facts.adoption,
            findings=self.state.findings,
            approvals=self.state.gates.approvals,
        )

    async def _enroll(self, step: EnrollmentStep) -> EnrollmentStep:
        c = step.contract
        if workflow.patched(KONDUKTOR_PATCH):
            self.state.gates.set_stage(
                "bootstrap",
                "konduktor cluster enroll, then worker bootstrap with the one-shot "
                "blob (it never leaves the worker host)",
            )
            bootstrap = self.bootstrap_gate.run(step, self._plan, *self._gate_times())
            if c.brownfield and workflow.patched(CORDON_BESIDE_BOOTSTRAP_PATCH):
                budget = self._params.condition_budget_s
                installed, why = await cordon_beside(
                    self.state.steps, step, budget, bootstrap, self.bootstrap_gate.answered_yes
                )
                step = self._step = with_facts(step, installed=installed)
                stop_unless_cordoned(self.state, step, why)
            else:
                installed = await bootstrap
                step = self._step = with_facts(step, installed=installed)
                if c.brownfield:
                    await self._cordon_at_once(step)
            await self._conditions(step, ["Registered", "Connected"])
            return await self._configured(step)
        self.state.gates.set_stage("enrollment", "Creating the one-shot BootstrapEnrollment and blob")
        facts = await self.state.steps.run(HUB_CREATE_ENROLLMENT, step)
        step = self._step = step.model_copy(update={"facts": facts})
        try:
            self.state.gates.set_stage("bootstrap", "Installing the worker agent, tunnel, log and metrics agents")
            installed = await self.state.steps.run(WORKER_INSTALL, step)
            step = self._step = with_facts(step, installed=installed)
            if c.brownfield:
                await self.state.steps.run(HUB_WAIT_WORKERCLUSTER, self._wait(step, []))
                await self._cordon(step, True, "brownfield enrollment")
            await self._conditions(step, ["Registered", "Connected"])
        finally:
            await self.state.steps.run(HUB_DESTROY_KEY, step)
        return await self._configured(step)

    async def _configured(self, step: EnrollmentStep) -> EnrollmentStep:
        if step.contract.brownfield:
            return await self._brownfield(step)
        await self._conditions(step, ["WorkerConfigured", "DispatchReady"])
        return step

    async def _bootstrap_plan(self, step: EnrollmentStep) -> Plan:
        self.state.gates.set_stage("planning", "Computing the bootstrap plan")
        return Plan(
            title=f"Enroll {self.state.target}",
            steps=await self.state.steps.run(WORKER_PLAN, step),
            notes=[
                "konduktor cluster enroll writes the one-shot blob (a private signing key) into a private "
                "file on the worker host; worker bootstrap consumes it and the file is removed at once"
            ],
        )

    def _wait(self, step: EnrollmentStep, conditions: list[str]) -> ConditionWait:
        return ConditionWait(
            contract=step.contract,
            conditions=conditions,
            budget_s=self._params.condition_budget_s,
            invariants=step.facts.invariants,
        )

    async def _conditions(self, step: EnrollmentStep, wanted: list[str], stop_on_refusal: bool = False) -> None:
        self.state.gates.set_stage(f"wait:{'+'.join(wanted)}", f"Waiting for {', '.join(wanted)}")
        wait = self._wait(step, wanted).model_copy(update={"stop_on_refusal": stop_on_refusal})
        self._report = await self.state.steps.run(HUB_WAIT_CONDITIONS, wait, summary=f"wait for {', '.join(wanted)}")
        if not self._report.converged and not stop_on_refusal:
            findings = troubleshoot(self._report, wanted)
            self.state.findings += findings
            raise ApplicationError(
                "conditions did not converge: " + "; ".join(f.message for f in findings),
                type="NotConverged",
                non_retryable=True,
            )

    async def _cordon(self, step: EnrollmentStep, cordoned: bool, reason: str) -> EnsureResult:
        return await self.state.steps.run(
            HUB_CORDON,
            Cordon(contract=step.contract, cordoned=cordoned, reason=reason),
            summary="cordon" if cordoned else "uncordon",
        )

    async def _cordon_at_once(self, step: EnrollmentStep) -> None:
        """Brownfield: cordon the WorkerCluster as soon as it appears; if that cannot be done, stop (never skip)."""
        try:
            appeared = await self.state.steps.run(HUB_WAIT_WORKERCLUSTER, self._wait(step, []))
            outcome = (await self._cordon(step, True, "brownfield enrollment")).outcome if appeared else None
            why = (
                ""
                if outcome not in (None, Outcome.absent)
                else (
                    f"WorkerCluster {self.state.target} did not appear within {self._params.condition_budget_s:.0f} s"
                )
            )
        except ActivityError as err:
            why = f"cordoning WorkerCluster {self.state.target} failed: {root_message(err)}"
        stop_unless_cordoned(self.state, step, why)

    async def _brownfield(self, step: EnrollmentStep) -> EnrollmentStep:
        self.state.gates.set_stage("convergence", "Waiting for Kueue/JobSet convergence; checking invariants")
        await self.state.steps.run(WORKER_WAIT_CONVERGENCE, self._wait(step, []))
        await self._conditions(step, ["WorkerConfigured"], stop_on_refusal=True)
        configured = self._report.conditions.get("WorkerConfigured")
        if configured and ADOPTION_REFUSAL in configured.message:
            diff = self._diff = await self.state.steps.run(WORKER_ADOPTION_DIFF, step)
            self.state.findings += diff.findings
            if diff.foreign or diff.differences:
                self.state.gates.set_stage("adoption-blocked", "Adoption blocked; nothing was relabelled")
                raise ApplicationError(
                    "adoption blocked: " + "; ".join(f.message for f in diff.findings),
                    type="AdoptionRefused",
                    non_retryable=True,
                )
            await self._gate("approve_adoption", f"adopt {len(diff.objects)} objects (diff is empty)")
            adopted = await self.state.steps.run(WORKER_ADOPT, with_facts(step, adoption=diff.objects))
            step = with_facts(step, adoption=adopted)
            await self.state.steps.run(HUB_SELECT_PRESET, step)
            await self._conditions(step, ["WorkerConfigured"])
            self.state.findings += await self.state.steps.run(WORKER_VERIFY_UIDS, step)
        self.state.findings += await self.state.steps.run(WORKER_CHECK_INVARIANTS, step)
        await self._gate("uncordon", "recorded work verified; enable Hub dispatch")
        await self._cordon(step, False, "")
        self._live = "uncordoned"
        await self._conditions(step, ["Registered", "Connected", "WorkerConfigured", "DispatchReady"])
        await self._canary(step)
        self._live = CANARY_PASSED
        await self._gate("resume_submissions", "resume the organization's submission paths")
        return step

    async def _canary(self, step: EnrollmentStep) -> None:
        """The canary through user-queue; with exact routing the other pool members are cordoned around it."""
        c = step.contract
        exact = c.canary_exact_routing
        self.state.gates.set_stage(
            "canary",
            "Running a canary JobSet through user-queue" + (" with the other pool members cordoned" if exact else ""),
        )
        hold = Cordon(contract=c, cordoned=True, reason=f"exact-routing canary for {self.state.target}")
        if exact:
            await self.state.steps.run(HUB_CORDON_POOL, hold, summary="cordon the other pool members")
        try:
            self.state.findings.append(await self.state.steps.run(HUB_CANARY, step))
        finally:
            if exact:
                await self.state.steps.run(
                    HUB_CORDON_POOL,
                    hold.model_copy(update={"cordoned": False}),
                    summary="uncordon the other pool members",
                )

    def _gate_times(self) -> tuple[timedelta, timedelta]:
        return (
            timedelta(seconds=self._params.gate_escalate_after_s),
            timedelta(seconds=self._params.gate_expire_after_s),
        )

    async def _after_failure(self, plan: Plan, err: BaseException) -> None:
        await self.failures.after_failure(self._step, self._live, plan, err, *self._gate_times())

    async def _gate(self, name: str, description: str) -> GateAnswer:
        return await self.state.wait_gate(name, description, *self._gate_times())

    @workflow.signal(name="bootstrap_plan_printed", description="From konduktor.bootstrap: the CLI's plan as printed")
    def bootstrap_plan_printed(self, printed: BootstrapPlanPrinted) -> None:
        self.bootstrap_gate.on_printed(printed)

    @workflow.query(name="bootstrap_plan_answer", description="For konduktor.bootstrap: the answer to a printed plan")
    def bootstrap_plan_answer(self, sha256: str) -> BootstrapAnswer:
        return self.bootstrap_gate.answer(sha256)

    @workflow.query(name="adoption_diff")
    def adoption_diff(self) -> AdoptionDiff | None:
        return self._diff


WORKFLOWS = [WorkerEnrollmentWorkflow]
