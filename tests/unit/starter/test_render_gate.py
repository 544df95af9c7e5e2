"""``tenantflow status`` shows a gate's description as it is: a command's output it binds (a reset dry run) keeps
its brackets and lines, and the plan keeps one row per object."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from tenantflow.models.gates import GateState
from tenantflow.models.plan import Action, Plan, PlanStep
from tenantflow.models.status import RunStatus
from tenantflow.starter.render import plan_view, status_view

DRY_RUN = "Worker reset plan (dry run)\n\n[bold]ACTION[/bold]   KIND\nDelete   Namespace   -   trainy-system [y/N]"


def screen(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_a_gate_shows_its_description_verbatim() -> None:
    gate = GateState(
        name="approve_plan",
        description=f"approve plan abc (1 writes)\n\n```\n{DRY_RUN}\n```",
        opened_at=datetime(2026, 1, 1, tzinfo=UTC),
        how_to_answer=["tenantflow approve x --plan-hash abc"],
    )
    shown = screen(status_view("x", RunStatus(workflow="WorkerDecommission", target="t", stage="g", gates=[gate])))
    lines = [line.strip("│ ").rstrip() for line in shown.splitlines()]
    assert all(line.rstrip() in lines for line in DRY_RUN.splitlines()), shown


def test_a_text_of_several_lines_keeps_its_plan_row_on_one_line() -> None:
    step = PlanStep(layer="worker", kind="Reset", name="w", action=Action.update, detail={"dry_run": DRY_RUN})
    rows = [line.rstrip() for line in screen(plan_view(Plan(title="t", steps=[step]))).splitlines() if line[:1] == "~"]
    assert rows == ["~ worker  Reset  w  dry_run=Worker reset plan (dry run) …"]
