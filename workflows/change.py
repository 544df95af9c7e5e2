"""``TenantChange``: change an onboarded tenant to a new contract through the same plan gate (issue 17).

``tenantflow apply CONTRACT`` starts it with the tenant's recorded contract (its latest tenant record) as
``previous``, under the tenant's run id ``tenant/<slug>`` (so ``status``, ``approve``, ``result`` and ``cancel``
work as for onboarding, and one run per tenant at a time). A new workflow type, so recorded onboarding histories
stay untouched. The run:

1. refuses a slug change (:func:`models.change.slug_refusal`); holds the tenant (``workflows/tenant_hold.py``, runs
   with its patch: while another run of the tenant holds it, the change ends); reads the users the new contract
   drops;
2. preflight: ``change.preflight`` chooses the nodes after the change (grow: the Reservation's plus free ones;
   shrink: which to release, idle first) and refuses removing a user who has running or pending jobs, naming
   them; then the other layers' preflights, as onboarding runs them;
3. plans: onboarding's plan of the new contract (creates and updates: quotas, QoS and wall limits, GrpTRES,
   SSH keys in the login Secret, display name, the Reservation's and the partition's nodes) plus
   ``change.plan`` (deletes: users removed, nodes released with the jobs the run will wait for), and waits for
   ``approve_plan`` with the plan's hash, re-planning before the first write as onboarding does;
4. applies: drains the nodes to release and waits for their jobs (heartbeating; nothing is killed), runs
   onboarding's apply steps (the ensures shrink or grow the Reservation, then the partition, and raise or lower
   the quotas and GrpTRES), resumes the released nodes, removes the dropped users (Slurm first, then Authentik;
   homes kept), then validates and renders the handover sheet; a failure rolls everything back (a change's
   own steps first: users back, drains lifted; then the runbook's order);
5. stores the tenant record of the new contract. Smoke jobs are not re-run (the NCCL test needs two nodes; a
   one-node tenant is a valid change).

A sibling of ``TenantOnboarding``, not a subclass: both inherit
:class:`~tenantflow.workflows.tenant_run.TenantWorkflow` (the tenant's handlers), and the plan gate, the apply steps
on the saga, validation and the record come from the :class:`~tenantflow.workflows.tenant_run.TenantRun` it builds.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.change import ChangeInput, removed_users, slug_refusal
    from tenantflow.models.onboarding import Facts, Handover, OnboardingResult, StepInput, StepResult
    from tenantflow.models.plan import Plan, PlanStep
    from tenantflow.models.results import EnsureResult, Outcome
    from tenantflow.models.runbook import (
        CAPACITY,
        CHANGE_PLAN,
        CHANGE_PREFLIGHT,
        DRAIN_NODES,
        PLAN,
        PREFLIGHT,
        RELEASE_NODES,
        REMOVE_USERS,
        WAIT_DRAINED,
    )
    from tenantflow.models.step import Step

from tenantflow.workflows.search import TENANT_SLUG
from tenantflow.workflows.tenant_hold import HOLD_PATCH, claim
from tenantflow.workflows.tenant_run import TenantWorkflow


@workflow.defn(name="TenantChange")
class TenantChange(TenantWorkflow):
    WORKFLOW = "TenantChange"

    @workflow.run
    async def run(self, params: ChangeInput) -> OnboardingResult:
        state, tenant = self.state, self.tenant
        contract = params.contract
        state.target = state.steps.target = contract.slug
        workflow.upsert_search_attributes([TENANT_SLUG.value_set(contract.slug)])
        refusal = slug_refusal(params.previous.slug, contract)
        if refusal:
            state.gates.set_stage("refused", refusal)
            raise ApplicationError(refusal, type="Invalid", non_retryable=True)
        if workflow.patched(HOLD_PATCH):
            await claim(state, contract.slug)

        facts = Facts(remove_users=removed_users(params.previous, contract))
        first = StepInput(contract=contract, facts=facts, run_id=workflow.info().workflow_id)
        outcome = await tenant.gated_writes(first, params, self._preflight, self._build_plan, self._apply_and_validate)
        if isinstance(outcome, OnboardingResult):
            return outcome
        plan, applied, handover = outcome
        await tenant.store_record(contract, applied, handover)
        return tenant.completed(f"Tenant {contract.slug} changed", plan, applied, handover)

    async def _preflight(self, step_input: StepInput) -> Facts:
        steps, findings = self.state.steps, self.state.findings
        result = await steps.run(CHANGE_PREFLIGHT, step_input)
        findings.extend(result.findings)
        step_input = step_input.model_copy(update={"facts": result.facts})
        for step in PREFLIGHT:
            if step is not CAPACITY.preflight:
                findings.extend((await steps.run(step, step_input)).findings)
        return result.facts

    async def _build_plan(self, step_input: StepInput) -> Plan:
        state = self.state
        state.gates.set_stage("planning", "Computing the plan: the new contract against the world, and removals")
        steps: list[PlanStep] = []
        for step in (*PLAN, CHANGE_PLAN):
            steps.extend(await state.steps.run(step, step_input))
        facts, contract = step_input.facts, step_input.contract
        notes = [f"nodes: {', '.join(facts.nodes)}"]
        notes += (
            [f"nodes released (drained first; running jobs are waited for): {', '.join(facts.release_nodes)}"]
            if facts.release_nodes
            else []
        )
        notes += [f"users removed (homes kept): {', '.join(facts.remove_users)}"] if facts.remove_users else []
        state.plan = Plan(title=f"Change {contract.slug}", steps=steps, notes=notes)
        return state.plan

    async def _own_step(self, step: Step[StepInput, StepResult], step_input: StepInput, stage: str) -> Facts:
        state, saga = self.state, self.tenant.saga
        state.gates.set_stage(f"apply:{step.name}", stage)
        try:
            result = await state.steps.run(step, step_input, summary=f"change: {stage}")
        except BaseException:
            if step is DRAIN_NODES:  # some nodes may be drained: the undo resumes those whose drain is ours
                maybe = [
                    EnsureResult(layer="change", kind="Node", name=node, outcome=Outcome.updated)
                    for node in step_input.facts.release_nodes
                ]
                saga.push(step, maybe)
            raise
        if step.undo is not None:
            saga.push(step, result.results)
        state.findings.extend(result.findings)
        return result.facts

    async def _apply_change(self, step_input: StepInput, applied: list[EnsureResult]) -> Facts:
        facts = step_input.facts
        if facts.release_nodes:
            nodes = ", ".join(facts.release_nodes)
            await self._own_step(DRAIN_NODES, step_input, f"Draining {nodes}: no new job starts there")
            await self._own_step(
                WAIT_DRAINED, step_input, f"Waiting for the jobs running on {nodes} to end (none is killed)"
            )
        facts = await self.tenant.apply(step_input, applied)
        step_input = step_input.model_copy(update={"facts": facts})
        if facts.release_nodes:
            await self._own_step(RELEASE_NODES, step_input, "Resuming the nodes the tenant gave back")
        if facts.remove_users:
            await self._own_step(
                REMOVE_USERS, step_input, f"Removing {', '.join(facts.remove_users)} from Slurm and Authentik"
            )
        return facts

    async def _apply_and_validate(self, step_input: StepInput, applied: list[EnsureResult]) -> Handover:
        facts = await self._apply_change(step_input, applied)
        return await self.tenant.validate_and_hand_over(step_input.model_copy(update={"facts": facts}))
