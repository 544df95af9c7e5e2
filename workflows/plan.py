"""``TenantPlan``: the read-only preflight and plan of a tenant contract (``tenantflow plan``), run on the worker.

It runs the catalogue's preflight steps (``models/runbook.py``) as the onboarding does, the capacity preflight
first (it chooses the nodes), then the others at once; only if no preflight found an error, every layer's plan
step at once; and returns the findings and the plan (:class:`~tenantflow.models.preview.PlanReport`). Every step
is a read the catalogue marks local, so each runs as a local activity on the worker that runs the workflow, where
the services' credentials are: the operator's machine needs only Temporal access. It writes nothing and has no
gate; its activities read the world as the contract's onboarding would (``activities/common/runs.py``). A read
that keeps failing fails the run with that step's error, named by the step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import StepInput
    from tenantflow.models.plan import Plan
    from tenantflow.models.preview import PLAN_WORKFLOW, PlanInput, PlanReport
    from tenantflow.models.runbook import CAPACITY, PLAN, PREFLIGHT
    from tenantflow.models.step import Step

from tenantflow.workflows.drift import READ_RETRY
from tenantflow.workflows.steps import execute_local

R = TypeVar("R")


async def read(step: Step[StepInput, R], step_input: StepInput) -> R:
    """One read-only step as a local activity; a failure fails the run with the step's error, its message prefixed by
    the step's name (a local activity's failure reaches the client without the step)."""
    summary = f"{step.name} [{step_input.contract.slug}]: {step.summary}"
    try:
        return await execute_local(step, step_input, retry_policy=READ_RETRY, summary=summary)
    except ApplicationError as cause:  # a local activity's failure reaches the workflow as the activity's own error
        raise ApplicationError(
            f"{step.name}: {cause.message}", *cause.details, type=cause.type, non_retryable=True
        ) from None


async def reads(steps: Sequence[Step[StepInput, R]], step_input: StepInput) -> list[R]:
    """Read-only steps at once: their results in ``steps`` order (the first failure is raised)."""
    return list(await asyncio.gather(*(read(step, step_input) for step in steps)))


@workflow.defn(name=PLAN_WORKFLOW)
class TenantPlan:
    @workflow.run
    async def run(self, params: PlanInput) -> PlanReport:
        contract = params.contract
        step_input = StepInput(contract=contract, run_id=workflow.info().workflow_id)
        capacity = await read(CAPACITY.preflight, step_input)
        step_input = step_input.model_copy(update={"facts": capacity.facts})
        rest = await reads(PREFLIGHT[1:], step_input)
        findings = [f for result in (capacity, *rest) for f in result.findings]
        report = PlanReport(slug=contract.slug, findings=findings, nodes=capacity.facts.nodes)
        if report.errors:
            return report
        steps = [planned for layer in await reads(PLAN, step_input) for planned in layer]
        nodes = ", ".join(capacity.facts.nodes)
        plan = Plan(title=f"Onboard {contract.slug}", steps=steps, notes=[f"nodes: {nodes}"])
        return report.model_copy(update={"plan": plan})
