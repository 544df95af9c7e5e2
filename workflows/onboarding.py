"""``TenantOnboarding``: the tenant-onboarding runbook as a durable, gated workflow.

Preflight reads every layer and fails before any write; the plan is published
and waits for ``approve_plan`` with its exact hash; then each runbook step runs
as an idempotent ``<layer>.<step>`` activity whose results go on the saga. Any
failure or cancel after approval unwinds the saga in the runbook's rollback
order. A step that fails (or is cancelled) goes on the saga too: its undo gets
the objects the approved plan said the step would create, found by their
deterministic names, because a step can crash after its writes but before its
result is recorded; the same holds for objects an earlier attempt of a step
created. Smoke tests, end-to-end validation and the handover sheet finish the run.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.onboarding import (
        Facts,
        Handover,
        OnboardingInput,
        OnboardingResult,
        StepInput,
        StepResult,
    )
    from tenantflow.models.plan import Action, Plan, PlanStep
    from tenantflow.models.results import EnsureResult, Finding

from tenantflow.workflows.gated import GatedRun
from tenantflow.workflows.saga import Saga
from tenantflow.workflows.search import TENANT_SLUG

PREFLIGHT_LAYERS = ("capacity", "identity", "kube", "slurm", "storage")
PLAN_LAYERS = ("capacity", "identity", "kube", "slurm", "storage", "login")
APPLY_STEPS: tuple[tuple[str, str, str], ...] = (
    ("capacity", "reservation", "create the Reservation of the chosen nodes"),
    ("capacity", "wait_reservation", "wait until the operator labels exactly the chosen nodes"),
    ("identity", "group", "create the Authentik group"),
    ("identity", "users", "create the Authentik users with SSH keys"),
    ("identity", "verify_ldap", "verify every user through the LDAP outpost"),
    ("kube", "namespace", "create the namespace with pod-security labels"),
    ("kube", "quota", "create the ResourceQuota and LimitRange"),
    ("kube", "binding", "create the ReservationBinding"),
    ("kube", "network_policy", "create the deny-all and allow NetworkPolicies"),
    ("kube", "rbac", "bind the tenant admins group"),
    ("slurm", "accounts", "add the Slurm account hierarchy"),
    ("slurm", "qos", "add the QoS and bind them to the account"),
    ("slurm", "users", "add the per-user associations"),
    ("slurm", "partition", "add the partition and reconfigure slurmctld"),
    ("storage", "filesystems", "create the Weka org and filesystems or tenant directories"),
    ("storage", "quotas", "set the /home and /scratch quotas"),
    ("storage", "csi", "create the CSI Secret, StorageClass and PVC"),
    ("login", "release", "deploy the login pod release"),
    ("login", "verify", "check getent, authorized_keys and sinfo on the login pod"),
)
SMOKE_STEPS = (
    ("smoke", "single_node", "single-node GPU job sees exactly one GPU"),
    ("smoke", "nccl", "2-node NCCL all-reduce reaches the tier busbw"),
    ("smoke", "storage", "write and read /scratch on the Weka mount"),
)
STEP_KINDS: dict[str, tuple[str, ...]] = {
    "capacity.reservation": ("Reservation",),
    "identity.group": ("Group",),
    "identity.users": ("User",),
    "kube.namespace": ("Namespace",),
    "kube.quota": ("ResourceQuota", "LimitRange"),
    "kube.binding": ("ReservationBinding",),
    "kube.network_policy": ("NetworkPolicy",),
    "kube.rbac": ("RoleBinding",),
    "slurm.accounts": ("account",),
    "slurm.qos": ("qos", "account-qos"),
    "slurm.users": ("user",),
    "slurm.partition": ("partition",),
    "storage.filesystems": ("WekaOrganization", "WekaFilesystem"),
    "storage.quotas": ("WekaQuota",),
    "storage.csi": ("Secret", "StorageClass", "PersistentVolumeClaim"),
    "login.release": ("Secret", "HelmRelease"),
}
"""The plan kinds each apply step writes (steps not listed write nothing)."""
UNDO_PLANNED_PATCH = "undo-planned-creates"
"""Histories recorded before failed steps were compensated replay without it."""
LONG_STEPS = {"capacity.wait_reservation", "login.release", "smoke.single_node", "smoke.nccl",
              "smoke.storage"}


@workflow.defn(name="TenantOnboarding")
class TenantOnboarding(GatedRun):
    WORKFLOW = "TenantOnboarding"
    DESCRIPTIONS = {
        "approve_plan": "Approve the published plan by its exact hash (payload {\"plan_hash\": \"...\", "
                        "\"approver\": \"...\"}); the apply steps start",
        "approve_plan_signal": "Signal form of approve_plan (same payload; a stale hash is ignored with a warning, "
                               "prefer the update which refuses it)",
    }

    def __init__(self) -> None:
        self._init_gated()
        self._saga = Saga()
        self._facts = Facts()

    @workflow.run
    async def run(self, params: OnboardingInput) -> OnboardingResult:
        contract = params.contract
        self._target = self._steps.target = contract.slug
        workflow.upsert_search_attributes([TENANT_SLUG.value_set(contract.slug)])

        self._gates.set_stage("preflight", "Reading every layer; nothing is written before approval")
        facts = self._facts = await self._preflight(
            StepInput(contract=contract, run_id=workflow.info().workflow_id))
        if self._errors():
            self._gates.set_stage("preflight-failed", "Preflight failed; nothing was written")
            raise ApplicationError(
                "preflight failed, nothing was written: "
                + "; ".join(f"{f.check}: {f.message}" + (f" (fix: {f.fix})" if f.fix else "")
                            for f in self._errors()),
                [f.model_dump(mode="json") for f in self._errors()],
                type="PreflightFailed", non_retryable=True)

        step_input = StepInput(contract=contract, facts=facts, run_id=workflow.info().workflow_id)
        plan = await self._build_plan(step_input)
        approved = await self._wait_plan_approval(plan, timedelta(seconds=params.approval_escalate_after_s),
                                                  timedelta(seconds=params.approval_expire_after_s))
        if not approved:
            self._gates.set_stage("rejected", "The plan was rejected; nothing was written")
            reason = self._rejected.reason if self._rejected else ""
            return OnboardingResult(slug=contract.slug, status="rejected", plan_hash=plan.plan_hash, plan=plan,
                                    message=f"plan rejected: {reason}")

        applied: list[EnsureResult] = []
        try:
            facts = await self._apply(step_input, applied)
            handover = await self._finish(StepInput(contract=contract, facts=facts, run_id=step_input.run_id))
        except (ActivityError, ApplicationError, asyncio.CancelledError) as err:
            self._gates.set_stage("rolling-back", f"Rolling back after: {err}")
            await self._saga.unwind(contract, self._facts)
            self._gates.set_stage("rolled-back", f"Rolled back after: {err}")
            raise
        self._gates.set_stage("completed", f"Tenant {contract.slug} onboarded; handover sheet in the result")
        return OnboardingResult(slug=contract.slug, status="completed", plan_hash=plan.plan_hash, plan=plan,
                                applied=applied, findings=self._findings, handover=handover)

    async def _preflight(self, step_input: StepInput) -> Facts:
        facts = step_input.facts
        for layer in PREFLIGHT_LAYERS:
            result = await self._steps.run(f"{layer}.preflight", step_input, StepResult,
                                           summary=f"{layer}: read-only preflight")
            self._findings.extend(result.findings)
            if layer == "capacity":
                facts = result.facts
                step_input = step_input.model_copy(update={"facts": facts})
        return facts

    async def _build_plan(self, step_input: StepInput) -> Plan:
        self._gates.set_stage("planning", "Computing the plan")
        steps: list[PlanStep] = []
        for layer in PLAN_LAYERS:
            steps.extend(await self._steps.run(f"{layer}.plan", step_input, list[PlanStep],
                                               summary=f"{layer}: plan"))
        contract = step_input.contract
        self._plan = Plan(title=f"Onboard {contract.slug}", steps=steps,
                          notes=[f"nodes: {', '.join(step_input.facts.nodes)}"])
        return self._plan

    async def _apply(self, step_input: StepInput, applied: list[EnsureResult]) -> Facts:
        facts = step_input.facts
        for layer, step, summary in APPLY_STEPS:
            name = f"{layer}.{step}"
            self._gates.set_stage(f"apply:{name}", f"Applying {name}: {summary}")
            patched = workflow.patched(UNDO_PLANNED_PATCH)
            planned = self._planned_creates(name) if patched else []
            try:
                result = await self._steps.run(
                    name, step_input.model_copy(update={"facts": facts}), StepResult,
                    summary=f"{layer}: {summary}",
                    timeout=timedelta(minutes=15) if name in LONG_STEPS else timedelta(minutes=5),
                    wait_for_cancel=patched)
            except BaseException:
                self._saga.push(layer, step, [], planned)
                raise
            self._saga.push(layer, step, result.results, planned)
            if patched and workflow.cancellation_reason() is not None:
                # a cancel that arrived while the step ran waited for it to finish, and its result swallows
                # the CancelledError (temporalio/sdk-python#620): honour it now, with the step on the saga
                raise asyncio.CancelledError(f"cancelled while {name} ran")
            applied.extend(result.results)
            self._findings.extend(result.findings)
            facts = self._facts = result.facts
        return facts

    def _planned_creates(self, name: str) -> list[PlanStep]:
        """The plan's ``create`` entries this step writes: whatever of them exists later was made by this run."""
        assert self._plan is not None
        layer = name.split(".")[0]
        return [p for p in self._plan.steps if p.layer == layer and p.kind in STEP_KINDS.get(name, ())
                and p.action is Action.create]

    async def _finish(self, step_input: StepInput) -> Handover:
        facts = step_input.facts
        for layer, step, summary in SMOKE_STEPS:
            self._gates.set_stage(f"smoke:{step}", f"Smoke test: {summary}")
            result = await self._steps.run(f"{layer}.{step}", step_input.model_copy(update={"facts": facts}),
                                           StepResult, summary=f"smoke: {summary}",
                                           timeout=timedelta(minutes=30))
            self._findings.extend(result.findings)
            facts = result.facts
        final = step_input.model_copy(update={"facts": facts})
        self._gates.set_stage("validate", "End-to-end validation: what done looks like")
        validation = await self._steps.run("validate.all", final, StepResult, summary="validate every layer")
        self._findings.extend(validation.findings)
        failed = [f for f in validation.findings if not f.ok and f.severity == "error"]
        if failed:
            raise ApplicationError("validation failed: " + "; ".join(f"{f.check}: {f.message}" for f in failed),
                                   type="ValidationFailed", non_retryable=True)
        self._gates.set_stage("handover", "Rendering the handover sheet")
        return await self._steps.run("handover.render", final, Handover, summary="render the handover sheet")

    def _errors(self) -> list[Finding]:
        return [f for f in self._findings if not f.ok and f.severity == "error"]
