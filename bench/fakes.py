"""Simulated onboarding activities (real names and types, a fixed latency each) for orchestration benchmarks.

They measure Temporal and the worker, not the external systems: each returns
what the workflow needs after sleeping ``latency_s``, like an API round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import activity

from models.onboarding import Handover, StepInput, StepResult, UndoInput
from models.plan import Action, PlanStep
from models.results import EnsureResult, Outcome
from workflows.onboarding import APPLY_STEPS, PLAN_LAYERS, PREFLIGHT_LAYERS, SMOKE_STEPS

NODES = [f"gpu-{i:03d}" for i in range(1, 9)]


def simulated_activities(latency_s: float = 0.01) -> dict[str, Callable[..., Any]]:
    """Every activity an onboarding calls, by name, as plain async functions (not yet ``activity.defn``)."""
    async def pause() -> None:
        await asyncio.sleep(latency_s)

    def preflight(layer: str) -> Callable[..., Any]:
        async def run(inp: StepInput) -> StepResult:
            await pause()
            return StepResult(facts=inp.facts.model_copy(update={"nodes": NODES}) if layer == "capacity"
                              else inp.facts)
        return run

    def plan(layer: str) -> Callable[..., Any]:
        async def run(inp: StepInput) -> list[PlanStep]:
            await pause()
            return [PlanStep(layer=layer, kind="Object", name=f"{inp.contract.slug}-{layer}", action=Action.create)]
        return run

    def apply(layer: str, step: str) -> Callable[..., Any]:
        async def run(inp: StepInput) -> StepResult:
            await pause()
            made = EnsureResult(layer=layer, kind="Object", name=f"{inp.contract.slug}-{step}",
                                outcome=Outcome.created)
            return StepResult(results=[made], facts=inp.facts)
        return run

    def undo() -> Callable[..., Any]:
        async def run(inp: UndoInput) -> list[EnsureResult]:
            await pause()
            return [r.model_copy(update={"outcome": Outcome.deleted}) for r in inp.results]
        return run

    async def render(inp: StepInput) -> Handover:
        await pause()
        return Handover(markdown=f"# {inp.contract.slug}\n", sheet={}, capacity_contract={})

    made: dict[str, Callable[..., Any]] = {}
    made.update({f"{layer}.preflight": preflight(layer) for layer in PREFLIGHT_LAYERS})
    made.update({f"{layer}.plan": plan(layer) for layer in PLAN_LAYERS})
    made.update({f"{layer}.{step}": apply(layer, step) for layer, step, _ in (*APPLY_STEPS, *SMOKE_STEPS)})
    made.update({f"{layer}.undo": undo() for layer in {layer for layer, _, _ in APPLY_STEPS} | {"smoke"}})
    made["validate.all"] = apply("validate", "all")
    made["handover.render"] = render
    return made


def as_activities(functions: dict[str, Callable[..., Any]]) -> list[Callable[..., Any]]:
    return [activity.defn(name=name)(fn) for name, fn in functions.items()]
