"""In-memory activities with the real names, for testing workflow orchestration alone.

They record every call so tests can assert order (apply, undo) and make a
chosen step fail. Integration with the real systems is tested elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.models.onboarding import Handover, StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome
from tenantflow.workflows.onboarding import APPLY_STEPS, PLAN_LAYERS, PREFLIGHT_LAYERS, SMOKE_STEPS, STEP_KINDS

NODES = [f"gpu-0{i}" for i in range(1, 9)]


@dataclass
class FakeWorld:
    fail_at: str | None = None
    preflight_error: str | None = None
    present: bool = False
    """Plans report every object as existing (unchanged), as for a finished tenant."""
    calls: list[str] = field(default_factory=list)

    def activities(self) -> list[Callable[..., Any]]:
        made: list[Callable[..., Any]] = []
        for layer in PREFLIGHT_LAYERS:
            made.append(self._preflight(layer))
        for layer in PLAN_LAYERS:
            made.append(self._plan(layer))
        for layer, step, _ in (*APPLY_STEPS, *SMOKE_STEPS):
            made.append(self._apply(layer, step))
        for layer in {layer for layer, _, _ in APPLY_STEPS} | {"smoke"}:
            made.append(self._undo(layer))
        made.append(self._apply("validate", "all"))
        made.append(self._handover())
        return made

    def _preflight(self, layer: str) -> Callable[..., Any]:
        @activity.defn(name=f"{layer}.preflight")
        async def preflight(inp: StepInput) -> StepResult:
            self.calls.append(f"{layer}.preflight")
            findings = []
            if self.preflight_error and layer == "capacity":
                findings.append(Finding(check="capacity.nodes", ok=False, message=self.preflight_error,
                                        fix="free some nodes"))
            facts = inp.facts.model_copy(update={"nodes": NODES}) if layer == "capacity" else inp.facts
            return StepResult(findings=findings, facts=facts)
        return preflight

    def _plan(self, layer: str) -> Callable[..., Any]:
        @activity.defn(name=f"{layer}.plan")
        async def plan(inp: StepInput) -> list[PlanStep]:
            self.calls.append(f"{layer}.plan")
            action = Action.unchanged if self.present else Action.create
            return [PlanStep(layer=layer, kind=kinds[0], name=f"{inp.contract.slug}-{step.split('.')[1]}",
                             action=action)
                    for step, kinds in STEP_KINDS.items() if step.startswith(f"{layer}.")]
        return plan

    def _apply(self, layer: str, step: str) -> Callable[..., Any]:
        name = f"{layer}.{step}"

        @activity.defn(name=name)
        async def apply(inp: StepInput) -> StepResult:
            self.calls.append(name)
            if self.fail_at == name:
                raise ApplicationError(f"injected failure at {name}", type="Invalid", non_retryable=True)
            result = EnsureResult(layer=layer, kind="Thing", name=f"{inp.contract.slug}-{step}",
                                  outcome=Outcome.created)
            return StepResult(results=[result], facts=inp.facts)
        return apply

    def _undo(self, layer: str) -> Callable[..., Any]:
        @activity.defn(name=f"{layer}.undo")
        async def undo(inp: UndoInput) -> list[EnsureResult]:
            self.calls.append(f"{layer}.undo:{inp.step}")
            return [r.model_copy(update={"outcome": Outcome.deleted}) for r in inp.results]
        return undo

    def _handover(self) -> Callable[..., Any]:
        @activity.defn(name="handover.render")
        async def render(inp: StepInput) -> Handover:
            self.calls.append("handover.render")
            return Handover(markdown=f"# {inp.contract.slug}\n", sheet={}, capacity_contract={})
        return render
