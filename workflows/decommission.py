"""``WorkerDecommission``: cordon, drain remote work, remove the Hub enrollment, then a gated ``worker reset``.

The reset plan (a dry run) is published and waits for ``approve_plan`` with its
hash (or ``reject_plan``: the reset is skipped); reset removes only what tenantflow and the agent installed (by label),
releases preset objects and leaves customer workloads, Kueue/JobSet objects,
cert-manager and a shared VictoriaMetrics operator. It does not need the agent.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_workflows import (
        ConditionWait,
        Cordon,
        DecommissionInput,
        DecommissionResult,
        EnrollmentStep,
    )
    from tenantflow.models.gates import ApprovePlan
    from tenantflow.models.plan import Plan
    from tenantflow.models.runbook import (
        HUB_CORDON,
        HUB_REMOVE_ENROLLMENT,
        WORKER_RESET,
        WORKER_RESET_PLAN,
        WORKER_WAIT_NO_REMOTE_WORK,
    )
    from tenantflow.models.status import RunStatus

from tenantflow.workflows.gate_handlers import GatedRun
from tenantflow.workflows.search import WORKER_CLUSTER


@workflow.defn(name="WorkerDecommission")
class WorkerDecommissionWorkflow(GatedRun):
    WORKFLOW = "WorkerDecommission"
    PLAN_APPROVED = "reset plan {plan_hash} approved"

    @workflow.update(
        name="approve_plan",
        description='Approve the worker reset plan by its exact hash (payload {"plan_hash": "..."}); the reset runs',
    )
    async def approve_plan(self, approval: ApprovePlan) -> str:  # type: ignore[override]  # self is this class
        return self._approve(approval)

    approve_plan.validator(GatedRun._validate_approve)

    @workflow.query(name="status", description="Stage, reset plan, open gate with how to answer, steps")
    def status(self) -> RunStatus:
        return self._run_status()

    def __init__(self) -> None:
        self._init_gated()

    @workflow.run
    async def run(self, params: DecommissionInput) -> DecommissionResult:
        c = params.contract
        self._target = self._steps.target = f"{c.tenant_namespace}/{c.worker_name}"
        workflow.upsert_search_attributes([WORKER_CLUSTER.value_set(c.worker_name)])
        step = EnrollmentStep(contract=c)
        self._gates.set_stage("cordon", "Stopping new Hub dispatch")
        await self._steps.run(HUB_CORDON, Cordon(contract=c, cordoned=True, reason="decommission"), summary="cordon")
        self._gates.set_stage("drain", "Waiting until no admitted remote work remains")
        await self._steps.run(
            WORKER_WAIT_NO_REMOTE_WORK, ConditionWait(contract=c, conditions=[], budget_s=params.drain_budget_s)
        )
        removed = await self._steps.run(HUB_REMOVE_ENROLLMENT, step, summary="decommission on the Hub")
        steps = await self._steps.run(WORKER_RESET_PLAN, step)
        plan = Plan(title=f"worker reset {self._target}", steps=steps)
        if not await self._wait_plan_approval(
            plan, timedelta(seconds=params.gate_escalate_after_s), timedelta(seconds=params.gate_expire_after_s)
        ):
            self._gates.set_stage("rejected", "The reset plan was rejected; the Hub enrollment is already removed")
            return DecommissionResult(
                worker=self._target, status="rejected", plan_hash=plan.plan_hash, plan=plan, removed=removed
            )
        self._gates.set_stage("reset", "Removing Trainy-installed worker components")
        removed += await self._steps.run(WORKER_RESET, step)
        self._gates.set_stage("completed", f"{self._target} decommissioned and reset")
        return DecommissionResult(
            worker=self._target, status="completed", plan_hash=plan.plan_hash, plan=plan, removed=removed
        )


WORKFLOWS = [WorkerDecommissionWorkflow]
