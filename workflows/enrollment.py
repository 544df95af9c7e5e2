"""``WorkerEnrollment``: the enroll-worker-cluster runbook (greenfield and brownfield) as a gated workflow.

Preflight (endpoints, the three permission checks, unique name) fails before any
write; the install plan waits for ``approve_plan`` with its hash; the one-shot
BootstrapEnrollment and blob are created (the signing key stays in a Hub Secret,
destroyed after redemption or on failure); bootstrap installs the worker side;
the four conditions are awaited with durable polling, and each one that does not
converge yields the runbook's troubleshooting finding. Brownfield adds the
invariants, ``submissions_paused``, an immediate cordon, convergence with
invariant checks, the adoption diff and ``approve_adoption``, ``uncordon``, a
canary and ``resume_submissions``. A failure before readiness removes what the
run installed and the enrollment record; a broken invariant keeps the worker cordoned.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.enrollment_run import (
        ADOPTION_REFUSAL,
        AdoptionDiff,
        ConditionReport,
        ConditionWait,
        Cordon,
        EnrollmentFacts,
        EnrollmentInput,
        EnrollmentResult,
        EnrollmentStep,
        Invariants,
        ObjectRef,
    )
    from models.gates import ApprovePlan, GateAnswer
    from models.plan import Plan, PlanStep
    from models.results import EnsureResult, Finding
    from models.status import RunStatus

from workflows.gates import Gates
from workflows.search import WORKER_CLUSTER
from workflows.steps import StepTracker

WAIT = timedelta(minutes=30)
BEAT = timedelta(seconds=30)
YES_NO_GATES = ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions")
TROUBLESHOOTING = {
    "Registered": ("status.usedAt of the BootstrapEnrollment is empty: the worker did not complete registration",
                   "kubectl --context HUB -n NS get bootstrapenrollment WORKER -o yaml; check the bootstrap output "
                   "and worker access to the Hub API"),
    "Connected": ("the worker tunnel heartbeat is missing",
                  "kubectl --context WORKER -n trainy-system logs deploy/trainy-worker-agent; check outbound access "
                  "to the Hub tunnel"),
    "WorkerConfigured": ("the worker's Kueue configuration does not match the Hub",
                         "read the condition message; an adoption refusal needs the adoption review"),
    "DispatchReady": ("the Hub cannot dispatch to this worker",
                      "confirm the worker is connected, configured at the current generation and not cordoned"),
}


def troubleshoot(report: ConditionReport, wanted: list[str]) -> list[Finding]:
    findings = []
    for name in wanted:
        if report.true(name):
            continue
        cond = report.conditions.get(name)
        detail = f" ({cond.reason}: {cond.message})" if cond else " (not reported)"
        what, fix = TROUBLESHOOTING[name]
        findings.append(Finding(check=f"condition.{name}", ok=False, message=f"{name}=False: {what}{detail}",
                                fix=fix))
    return findings


@workflow.defn(name="WorkerEnrollment")
class WorkerEnrollmentWorkflow:
    def __init__(self) -> None:
        self._gates = Gates()
        self._steps = StepTracker()
        self._plan: Plan | None = None
        self._findings: list[Finding] = []
        self._target = ""
        self._report = ConditionReport()
        self._diff: AdoptionDiff | None = None

    @workflow.run
    async def run(self, params: EnrollmentInput) -> EnrollmentResult:
        c = params.contract
        self._params = params
        self._target = self._steps.target = f"{c.tenant_namespace}/{c.worker_name}"
        workflow.upsert_search_attributes([WORKER_CLUSTER.value_set(c.worker_name)])
        step = EnrollmentStep(contract=c, facts=EnrollmentFacts(enrollment_id=workflow.info().workflow_id))

        self._gates.set_stage("preflight", "Checking both endpoints and permissions; nothing is written")
        self._findings += await self._steps.run("hub.preflight", step, list[Finding], summary="preflight")
        errors = [f for f in self._findings if not f.ok]
        if errors:
            self._gates.set_stage("preflight-failed", "Preflight failed; nothing was written")
            raise ApplicationError("preflight failed, nothing was written: "
                                   + "; ".join(f"{f.check}: {f.message} (fix: {f.fix})" for f in errors),
                                   type="PreflightFailed", non_retryable=True)

        invariants: Invariants | None = None
        if c.brownfield:
            invariants = await self._steps.run("worker.record_invariants", step, Invariants,
                                               summary="record running workload invariants")
            step = self._with(step, invariants=invariants)

        self._gates.set_stage("planning", "Computing the bootstrap plan")
        steps = await self._steps.run("worker.plan", step, list[PlanStep], summary="bootstrap plan")
        self._plan = Plan(title=f"Enroll {self._target}", steps=steps,
                          notes=["the private signing key stays in a Hub Secret and is destroyed after redemption"])
        wid = workflow.info().workflow_id
        await self._gate("approve_plan", f"approve plan {self._plan.plan_hash}",
                         [f"tenantflow approve {wid} --plan-hash {self._plan.plan_hash}",
                          f"Temporal UI: Update 'approve_plan' with {{\"plan_hash\": \"{self._plan.plan_hash}\"}}"])
        if c.brownfield:
            await self._gate("submissions_paused", "pause every Hub submission path for the organization")

        try:
            step = await self._enroll(step)
        except (ActivityError, ApplicationError) as err:
            if "InvariantBroken" in str(err) or _cause_type(err) == "InvariantBroken":
                self._gates.set_stage("stopped-invariant", f"Stopped, worker stays cordoned: {err}")
                raise
            self._gates.set_stage("compensating", f"Removing what this run installed after: {err}")
            await self._steps.run("hub.destroy_key", step, bool, summary="destroy the signing key")
            await self._steps.run("worker.uninstall", step, list[EnsureResult], summary="remove installed objects")
            await self._steps.run("hub.remove_enrollment", step, list[EnsureResult],
                                  summary="remove the enrollment record")
            self._gates.set_stage("rolled-back", f"Rolled back after: {err}")
            raise
        self._gates.set_stage("completed", f"{self._target} enrolled; all four conditions True")
        return EnrollmentResult(worker=self._target, status="completed", plan_hash=self._plan.plan_hash,
                                conditions=self._report.conditions, installed=step.facts.installed,
                                adopted=step.facts.adoption, findings=self._findings)

    def _with(self, step: EnrollmentStep, **facts: object) -> EnrollmentStep:
        return step.model_copy(update={"facts": step.facts.model_copy(update=facts)})

    async def _enroll(self, step: EnrollmentStep) -> EnrollmentStep:
        c = step.contract
        self._gates.set_stage("enrollment", "Creating the one-shot BootstrapEnrollment and blob")
        facts = await self._steps.run("hub.create_enrollment", step, EnrollmentFacts,
                                      summary="BootstrapEnrollment + signed blob")
        step = step.model_copy(update={"facts": facts})
        try:
            self._gates.set_stage("bootstrap", "Installing the worker agent, tunnel, log and metrics agents")
            installed = await self._steps.run("worker.install", step, list[EnsureResult], summary="bootstrap")
            step = self._with(step, installed=installed)
            if c.brownfield:
                await self._steps.run("hub.wait_workercluster", self._wait(step, []), bool, timeout=WAIT,
                                      heartbeat=BEAT, summary="wait for the WorkerCluster")
                await self._cordon(step, True, "brownfield enrollment")
            await self._conditions(step, ["Registered", "Connected"])
        finally:
            await self._steps.run("hub.destroy_key", step, bool, summary="destroy the signing key")
        if c.brownfield:
            step = await self._brownfield(step)
        else:
            await self._conditions(step, ["WorkerConfigured", "DispatchReady"])
        return step

    def _wait(self, step: EnrollmentStep, conditions: list[str]) -> ConditionWait:
        return ConditionWait(contract=step.contract, conditions=conditions,
                             budget_s=self._params.condition_budget_s, invariants=step.facts.invariants)

    async def _conditions(self, step: EnrollmentStep, wanted: list[str], stop_on_refusal: bool = False) -> None:
        self._gates.set_stage(f"wait:{'+'.join(wanted)}", f"Waiting for {', '.join(wanted)}")
        wait = self._wait(step, wanted).model_copy(update={"stop_on_refusal": stop_on_refusal})
        self._report = await self._steps.run("hub.wait_conditions", wait, ConditionReport, timeout=WAIT,
                                             heartbeat=BEAT, summary=f"wait for {', '.join(wanted)}")
        if not self._report.converged and not stop_on_refusal:
            findings = troubleshoot(self._report, wanted)
            self._findings += findings
            raise ApplicationError("conditions did not converge: " + "; ".join(f.message for f in findings),
                                   type="NotConverged", non_retryable=True)

    async def _cordon(self, step: EnrollmentStep, cordoned: bool, reason: str) -> None:
        await self._steps.run("hub.cordon", Cordon(contract=step.contract, cordoned=cordoned, reason=reason),
                              EnsureResult, summary="cordon" if cordoned else "uncordon")

    async def _brownfield(self, step: EnrollmentStep) -> EnrollmentStep:
        self._gates.set_stage("convergence", "Waiting for Kueue/JobSet convergence; checking invariants")
        await self._steps.run("worker.wait_convergence", self._wait(step, []), list[ObjectRef], timeout=WAIT,
                              heartbeat=BEAT, summary="Kueue/JobSet convergence")
        await self._conditions(step, ["WorkerConfigured"], stop_on_refusal=True)
        configured = self._report.conditions.get("WorkerConfigured")
        if configured and ADOPTION_REFUSAL in configured.message:
            diff = self._diff = await self._steps.run("worker.adoption_diff", step, AdoptionDiff,
                                                      summary="diff the preset objects")
            self._findings += diff.findings
            if diff.foreign or diff.differences:
                self._gates.set_stage("adoption-blocked", "Adoption blocked; nothing was relabelled")
                raise ApplicationError("adoption blocked: " + "; ".join(f.message for f in diff.findings),
                                       type="AdoptionRefused", non_retryable=True)
            await self._gate("approve_adoption", f"adopt {len(diff.objects)} objects (diff is empty)")
            adopted = await self._steps.run("worker.adopt", self._with(step, adoption=diff.objects), list[ObjectRef],
                                            summary="label the preset objects")
            step = self._with(step, adoption=adopted)
            await self._steps.run("hub.select_preset", step, EnsureResult, summary="select the preset")
            await self._conditions(step, ["WorkerConfigured"])
            self._findings += await self._steps.run("worker.verify_uids", step, list[Finding],
                                                    summary="verify adopted UIDs")
        self._findings += await self._steps.run("worker.check_invariants", step, list[Finding],
                                                summary="verify invariants")
        await self._gate("uncordon", "recorded work verified; enable Hub dispatch")
        await self._cordon(step, False, "")
        await self._conditions(step, ["Registered", "Connected", "WorkerConfigured", "DispatchReady"])
        self._gates.set_stage("canary", "Running a canary JobSet through user-queue")
        self._findings.append(await self._steps.run("hub.canary", step, Finding, timeout=timedelta(minutes=5),
                                                    heartbeat=BEAT, summary="canary"))
        await self._gate("resume_submissions", "resume the organization's submission paths")
        return step

    async def _gate(self, name: str, description: str, how: list[str] | None = None) -> GateAnswer:
        wid = workflow.info().workflow_id
        default = [f"tenantflow {name.replace('_', '-')} {wid}",
                   f"Temporal UI: Update 'answer_gate' with [\"{name}\", {{\"approver\": \"you\"}}]"]
        return await self._gates.wait(name, description, how or default,
                                      escalate_after=timedelta(seconds=self._params.gate_escalate_after_s),
                                      expire_after=timedelta(seconds=self._params.gate_expire_after_s))

    @workflow.update(name="approve_plan", description="Approve the bootstrap plan by its exact hash "
                     "(payload {\"plan_hash\": \"...\"}); the one-shot enrollment is created")
    async def approve_plan(self, approval: ApprovePlan) -> str:
        self._gates.answer("approve_plan", GateAnswer(approver=approval.approver, comment=approval.comment))
        return f"plan {approval.plan_hash} approved"

    @workflow.signal(name="approve_plan_signal", description="Signal form of approve_plan (a stale hash is ignored)")
    def approve_plan_signal(self, approval: ApprovePlan) -> None:
        self._gates.approve_by_signal(self._plan.plan_hash if self._plan else None, approval)

    @approve_plan.validator
    def _validate_plan(self, approval: ApprovePlan) -> None:
        self._gates.require_open("approve_plan")
        if self._plan is None or approval.plan_hash != self._plan.plan_hash:
            raise ValueError(f"stale or unknown plan hash {approval.plan_hash}")

    @workflow.update(name="answer_gate", description="Answer a yes/no gate: args [gate, {\"approver\": \"...\"}] "
                     "with gate one of submissions_paused, approve_adoption, uncordon, resume_submissions")
    async def answer_gate(self, name: str, answer: GateAnswer) -> str:
        self._gates.answer(name, answer)
        return f"{name} answered by {answer.approver}"

    @answer_gate.validator
    def _validate_gate(self, name: str, answer: GateAnswer) -> None:
        if name not in YES_NO_GATES:
            raise ValueError(f"unknown gate {name!r}; gates: {', '.join(YES_NO_GATES)}")
        self._gates.require_open(name)

    @workflow.signal(name="answer_gate_signal", description="Signal form of answer_gate (ignored unless open)")
    def answer_gate_signal(self, name: str, answer: GateAnswer) -> None:
        if name in YES_NO_GATES and name in self._gates.open:
            self._gates.answer(name, answer)
        else:
            workflow.logger.warning("ignored signal for gate %s that is not open", name)

    @workflow.query(name="status", description="Stage, plan, open gates with how to answer, steps and findings")
    def status(self) -> RunStatus:
        return RunStatus(workflow="WorkerEnrollment", target=self._target, stage=self._gates.stage,
                         plan_hash=self._plan.plan_hash if self._plan else None, plan=self._plan,
                         gates=list(self._gates.open.values()), steps=self._steps.records,
                         findings=self._findings)

    @workflow.query(name="adoption_diff")
    def adoption_diff(self) -> AdoptionDiff | None:
        return self._diff


def _cause_type(err: BaseException) -> str:
    cause = err.__cause__
    return str(getattr(cause, "type", "")) if cause is not None else ""


WORKFLOWS = [WorkerEnrollmentWorkflow]
