"""``tenantflow plan``: the onboarding's read-only preflight and plan, run in-process without a workflow.

The catalogue's preflight and plan steps (``models/runbook.py``), the ones the
workflow runs, are called here in the same order: each step's registered activity
function through ``temporalio.testing.ActivityEnvironment`` (they read the
services configured by the environment or ``TENANTFLOW_ENV_FILE``). Nothing is
written: these activities only read.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.settings import settings as service_settings
from tenantflow.models.base import Strict
from tenantflow.models.onboarding import StepInput
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import Finding
from tenantflow.models.runbook import CAPACITY_PREFLIGHT, PLAN, PREFLIGHT
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import onboarding_id
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.registry import implementation
from tenantflow.worker.run import load_env_file


class PlanReport(Strict):
    """What ``tenantflow plan`` found: every finding and, when preflight passed, the plan."""

    slug: str
    findings: list[Finding] = Field(default_factory=list)
    plan: Plan | None = None
    nodes: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok and f.severity == "error"]


def use_configured_services() -> None:
    """Load ``TENANTFLOW_ENV_FILE`` (without overriding the environment) and re-read service settings."""
    load_env_file(WorkerSettings())
    service_settings.cache_clear()


def preflight_and_plan(contract: TenantContract) -> PlanReport:
    """Run every preflight, then (only if no error was found) every layer's plan, as the onboarding
    workflow of ``contract`` would (its workflow id tells the identity layer which objects are its own)."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=onboarding_id(contract.slug), workflow_type="TenantOnboarding")
    step_input = StepInput(contract=contract, run_id=f"plan/{contract.slug}")
    findings: list[Finding] = []
    for step in PREFLIGHT:
        result = env.run(implementation(step), step_input)
        findings.extend(result.findings)
        if step is CAPACITY_PREFLIGHT:
            step_input = step_input.model_copy(update={"facts": result.facts})
    report = PlanReport(slug=contract.slug, findings=findings, nodes=step_input.facts.nodes)
    if report.errors:
        return report
    steps: list[PlanStep] = []
    for read in PLAN:
        steps.extend(env.run(implementation(read), step_input))
    plan = Plan(title=f"Onboard {contract.slug}", steps=steps, notes=[f"nodes: {', '.join(step_input.facts.nodes)}"])
    return report.model_copy(update={"plan": plan})
