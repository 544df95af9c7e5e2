"""Reading the plan the CLI prints: its one-line rows, matched against the plan's objects."""

from __future__ import annotations

import re

from tenantflow.models.plan import Plan, PlanStep
from tenantflow.starter.render import ACTION_MARK

ROW = re.compile(r"^[" + re.escape("".join(ACTION_MARK.values())) + r"] [a-z]+ ")


def row_of(step: PlanStep) -> re.Pattern[str]:
    """The one line that shows ``step``: mark, layer, kind and its whole name, then details or the line's end."""
    name = f"{step.namespace}/{step.name}" if step.namespace else step.name
    return re.compile(
        rf"^{re.escape(ACTION_MARK[step.action])} {step.layer} +{re.escape(step.kind)} +"
        rf"{re.escape(name)}(  |$)",
        re.MULTILINE,
    )


def assert_one_line_per_object(screen: str, plan: Plan, columns: int) -> None:
    """One row per planned object, the rows on consecutive lines (nothing wrapped onto a line of its own)."""
    lines = screen.splitlines()
    at = [index for index, line in enumerate(lines) if ROW.match(line)]
    assert len(at) == len(plan.steps) and at == list(range(at[0], at[0] + len(at))), screen
    assert all(len(lines[index].rstrip()) <= columns for index in at), screen
    for step in plan.steps:
        assert len(row_of(step).findall(screen)) == 1, f"{step.ref()} not on one line of:\n{screen}"
