"""``WorkerDecommission``: cordon, drain remote work, remove the Hub enrollment, then a gated ``worker reset``.

The reset plan (a dry run) is published and waits for ``approve_plan`` with its
hash; reset removes only what tenantflow and the agent installed (by label),
releases preset objects and leaves customer workloads, Kueue/JobSet objects,
cert-manager and a shared VictoriaMetrics operator. It does not need the agent.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.enrollment_run import (
        ConditionWait,
        Cordon,
        DecommissionInput,
        DecommissionResult,
        EnrollmentStep,
    )
    from models.gates import ApprovePlan, GateAnswer
    from models.plan import Plan, PlanStep
    from models.results import EnsureResult
    from models.status import RunStatus

from workflows.gates import Gates
from workflows.search import WORKER_CLUSTER
from workflows.steps import StepTracker


@workflow.defn(name="WorkerDecommission")
class WorkerDecommissionWorkflow:
    def __init__(self) -> None:
        self._gates = Gates()
        self._steps = StepTracker()
        self._plan: Plan | None = None
        self._target = ""

    @workflow.run
    async def run(self, params: DecommissionInput) -> DecommissionResult:
        c = params.contract
        self._target = self._steps.target = f"{c.tenant_namespace}/{c.worker_name}"
        workflow.upsert_search_attributes([WORKER_CLUSTER.value_set(c.worker_name)])
        step = EnrollmentStep(contract=c)
        self._gates.set_stage("cordon", "Stopping new Hub dispatch")
        await self._steps.run("hub.cordon", Cordon(contract=c, cordoned=True, reason="decommission"), EnsureResult,
                              summary="cordon")
        self._gates.set_stage("drain", "Waiting until no admitted remote work remains")
        await self._steps.run("worker.wait_no_remote_work",
                              ConditionWait(contract=c, conditions=[], budget_s=params.drain_budget_s), bool,
                              timeout=timedelta(minutes=30), heartbeat=timedelta(seconds=30), summary="drain")
        removed = await self._steps.run("hub.remove_enrollment", step, list[EnsureResult],
                                        summary="decommission on the Hub")
        steps = await self._steps.run("worker.reset_plan", step, list[PlanStep], summary="worker reset --dry-run")
        self._plan = Plan(title=f"worker reset {self._target}", steps=steps)
        await self._gates.wait("approve_plan", f"approve reset plan {self._plan.plan_hash}",
                               [f"tenantflow approve {workflow.info().workflow_id} --plan-hash {self._plan.plan_hash}",
                                f"Temporal UI: Update 'approve_plan' with "
                                f"{{\"plan_hash\": \"{self._plan.plan_hash}\"}}"],
                               escalate_after=timedelta(seconds=params.gate_escalate_after_s),
                               expire_after=timedelta(seconds=params.gate_expire_after_s))
        self._gates.set_stage("reset", "Removing Trainy-installed worker components")
        removed += await self._steps.run("worker.reset", step, list[EnsureResult], summary="worker reset")
        self._gates.set_stage("completed", f"{self._target} decommissioned and reset")
        return DecommissionResult(worker=self._target, status="completed", plan_hash=self._plan.plan_hash,
                                  plan=self._plan, removed=removed)

    @workflow.update(name="approve_plan", description="Approve the worker reset plan by its exact hash "
                     "(payload {\"plan_hash\": \"...\"}); the reset runs")
    async def approve_plan(self, approval: ApprovePlan) -> str:
        self._gates.answer("approve_plan", GateAnswer(approver=approval.approver, comment=approval.comment))
        return f"reset plan {approval.plan_hash} approved"

    @workflow.signal(name="approve_plan_signal", description="Signal form of approve_plan (a stale hash is ignored)")
    def approve_plan_signal(self, approval: ApprovePlan) -> None:
        self._gates.approve_by_signal(self._plan.plan_hash if self._plan else None, approval)

    @approve_plan.validator
    def _validate_plan(self, approval: ApprovePlan) -> None:
        self._gates.require_open("approve_plan")
        if self._plan is None or approval.plan_hash != self._plan.plan_hash:
            raise ValueError(f"stale or unknown plan hash {approval.plan_hash}")

    @workflow.query(name="status", description="Stage, reset plan, open gate with how to answer, steps")
    def status(self) -> RunStatus:
        return RunStatus(workflow="WorkerDecommission", target=self._target, stage=self._gates.stage,
                         plan_hash=self._plan.plan_hash if self._plan else None, plan=self._plan,
                         gates=list(self._gates.open.values()), steps=self._steps.records)


WORKFLOWS = [WorkerDecommissionWorkflow]
