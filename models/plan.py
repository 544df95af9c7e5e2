"""Plans: every object a run will create, adopt, change or leave, with a content hash.

An operator approves a plan by its hash; the hash covers the steps only, so the
same world and contract always give the same hash.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import Field

from tenantflow.models.base import Strict


class Action(StrEnum):
    create = "create"
    adopt = "adopt"
    update = "update"
    unchanged = "unchanged"
    delete = "delete"
    leave = "leave"


class PlanStep(Strict):
    layer: str = Field(..., description="capacity, identity, kube, slurm, storage, login, hub, worker")
    kind: str
    name: str
    namespace: str | None = None
    action: Action
    detail: dict[str, Any] = Field(default_factory=dict)


class Plan(Strict):
    title: str
    steps: list[PlanStep]
    notes: list[str] = Field(default_factory=list)

    @property
    def plan_hash(self) -> str:
        body = json.dumps([s.model_dump(mode="json") for s in self.steps], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def writes(self) -> list[PlanStep]:
        return [s for s in self.steps if s.action not in (Action.unchanged, Action.leave)]

    def by_layer(self) -> dict[str, list[PlanStep]]:
        layers: dict[str, list[PlanStep]] = {}
        for step in self.steps:
            layers.setdefault(step.layer, []).append(step)
        return layers


def plan_changes(before: Plan, after: Plan) -> list[str]:
    """What differs between two plans, one line per object: ``+`` added, ``-`` gone, ``~`` changed."""

    def key(step: PlanStep) -> tuple[str, str, str, str]:
        return step.layer, step.kind, step.namespace or "", step.name

    old, new = {key(s): s for s in before.steps}, {key(s): s for s in after.steps}
    lines: list[str] = []
    for layer, kind, namespace, name in sorted(old.keys() | new.keys()):
        label = f"{layer} {kind} {namespace + '/' if namespace else ''}{name}"
        was, now = old.get((layer, kind, namespace, name)), new.get((layer, kind, namespace, name))
        if was is None and now is not None:
            lines.append(f"+ {now.action} {label}")
        elif now is None and was is not None:
            lines.append(f"- {was.action} {label}")
        elif was is not None and now is not None and was != now:
            lines.append(
                f"~ {label}: {was.action} -> {now.action}" + ("" if was.detail == now.detail else " (details changed)")
            )
    return lines
