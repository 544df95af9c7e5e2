"""``tenantflow plan``: the onboarding's read-only preflight and plan, run in-process without a workflow.

The same ``<layer>.preflight`` and ``<layer>.plan`` activity functions the
workflow runs are called here, in the order the workflow calls them, through
``temporalio.testing.ActivityEnvironment`` (they read the services configured
by the environment or ``TENANTFLOW_ENV_FILE``). Nothing is written: these
activities only read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field
from temporalio.testing import ActivityEnvironment

from tenantflow.activities import capacity, identity, kube, login, slurm, storage
from tenantflow.activities.settings import settings as service_settings
from tenantflow.models.base import Strict
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.results import Finding
from tenantflow.models.tenant import TenantContract
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import load_env_file
from tenantflow.workflows.onboarding import PLAN_LAYERS, PREFLIGHT_LAYERS

LAYER_MODULES = {module.__name__.rsplit(".", 1)[-1]: module
                 for module in (capacity, identity, kube, slurm, storage, login)}


class PlanReport(Strict):
    """What ``tenantflow plan`` found: every finding and, when preflight passed, the plan."""

    slug: str
    findings: list[Finding] = Field(default_factory=list)
    plan: Plan | None = None
    nodes: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok and f.severity == "error"]


def layer_activity(layer: str, kind: str) -> Callable[..., Any]:
    fn: Callable[..., Any] = getattr(LAYER_MODULES[layer], kind)
    return fn


def use_configured_services() -> None:
    """Load ``TENANTFLOW_ENV_FILE`` (without overriding the environment) and re-read service settings."""
    load_env_file(WorkerSettings())
    service_settings.cache_clear()


def preflight_and_plan(contract: TenantContract) -> PlanReport:
    """Run every preflight, then (only if no error was found) every layer's plan."""
    env = ActivityEnvironment()
    step_input = StepInput(contract=contract, run_id=f"plan/{contract.slug}")
    findings: list[Finding] = []
    for layer in PREFLIGHT_LAYERS:
        result: StepResult = env.run(layer_activity(layer, "preflight"), step_input)
        findings.extend(result.findings)
        if layer == "capacity":
            step_input = step_input.model_copy(update={"facts": result.facts})
    report = PlanReport(slug=contract.slug, findings=findings, nodes=step_input.facts.nodes)
    if report.errors:
        return report
    steps: list[PlanStep] = []
    for layer in PLAN_LAYERS:
        steps.extend(env.run(layer_activity(layer, "plan"), step_input))
    plan = Plan(title=f"Onboard {contract.slug}", steps=steps, notes=[f"nodes: {', '.join(step_input.facts.nodes)}"])
    return report.model_copy(update={"plan": plan})
