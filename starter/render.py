"""Rich renderings for the terminal: plans (one line per object, or --wide), run status, live views, progress."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tenantflow.models.plan import Action, Plan, PlanStep
from tenantflow.models.results import Finding, Severity
from tenantflow.models.status import RunStatus, StepState

if TYPE_CHECKING:
    from tenantflow.starter.client import TenantflowClient

ACTION_STYLE = {
    Action.create: "green",
    Action.adopt: "cyan",
    Action.update: "yellow",
    Action.unchanged: "dim",
    Action.delete: "red",
    Action.leave: "dim",
}
STEP_STYLES = {StepState.done: "green", StepState.failed: "red", StepState.running: "yellow"}
SEVERITY_STYLES = {Severity.error: "red", Severity.warning: "yellow", Severity.info: ""}
ACTION_MARK = {
    Action.create: "+",
    Action.adopt: "&",
    Action.update: "~",
    Action.unchanged: "=",
    Action.delete: "-",
    Action.leave: ".",
}


def _object(step: PlanStep) -> str:
    return f"{step.namespace}/{step.name}" if step.namespace else step.name


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_value(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def _pairs(step: PlanStep) -> list[str]:
    return [f"{key}={_value(value)}" for key, value in step.detail.items()]


PLAN_COUNT = {
    Action.create: "to create",
    Action.adopt: "to adopt",
    Action.update: "to update",
    Action.unchanged: "unchanged",
    Action.delete: "to delete",
    Action.leave: "left in place",
}


def _plan_rows(plan: Plan) -> list[Text]:
    """One line per object: action, layer and kind aligned, then the object's name and as much of its details
    as the rest of the terminal line holds (cut with an ellipsis, like every line that does not fit)."""
    layer_width = max([len("layer"), *(len(step.layer) for step in plan.steps)])
    kind_width = max([len("kind"), *(len(step.kind) for step in plan.steps)])
    lines = [
        Text(
            f"  {'layer':<{layer_width}}  {'kind':<{kind_width}}  object  ",
            style="bold",
            no_wrap=True,
            overflow="ellipsis",
        )
        + Text("details", style="bold dim")
    ]
    for step in plan.steps:
        style = ACTION_STYLE[step.action]
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(ACTION_MARK[step.action], style=style)
        line.append(f" {step.layer:<{layer_width}}  {step.kind:<{kind_width}}  ")
        line.append(_object(step), style=style)
        if step.detail:
            # a text of several lines (a dry run the plan binds) shows its first line here, all of it with --wide
            pairs = [pair.split("\n", 1)[0] + (" …" if "\n" in pair else "") for pair in _pairs(step)]
            line.append("  " + ", ".join(pairs), style="dim")
        lines.append(line)
    return lines


def _plan_blocks(plan: Plan) -> list[Text]:
    """Every object with every detail, one ``key=value`` per line."""
    lines: list[Text] = []
    for step in plan.steps:
        style = ACTION_STYLE[step.action]
        lines.append(Text(f"{ACTION_MARK[step.action]} {step.layer} {step.kind} {_object(step)}", style=style))
        lines.extend(Text(f"    {pair}", style="dim") for pair in _pairs(step))
    return lines


def plan_view(plan: Plan, wide: bool = False) -> Group:
    """The plan: one row per object (action, layer, kind, object, details cut to fit the terminal), then the
    counts and notes; ``wide`` shows every detail of every object instead (``-o json`` has every field)."""
    counts = [(action, sum(1 for s in plan.steps if s.action == action)) for action in Action]
    summary = "Plan: " + ", ".join(f"{ACTION_MARK[a]} {n} {PLAN_COUNT[a]}" for a, n in counts if n)
    body = _plan_blocks(plan) if wide else _plan_rows(plan)
    return Group(
        Text(f"{plan.title}  (plan hash {plan.plan_hash})", style="bold"),
        *body,
        Text(summary, style="bold"),
        *(Text(note, style="dim") for note in plan.notes),
    )


def status_view(workflow_id: str, status: RunStatus) -> Group:
    steps = Table(title="steps")
    for column in ("step", "state", "took", "what"):
        steps.add_column(column)
    for record in status.steps:
        took = ""
        if record.finished_at is not None:
            took = f"{(record.finished_at - record.started_at).total_seconds():.1f}s"
        style = STEP_STYLES[record.state]
        what = f"{record.summary}\n{record.error}" if record.error else record.summary
        steps.add_row(record.name, Text(record.state, style=style), took, Text(what))
    parts: list[Panel | Table | Text] = [
        Text(f"{status.workflow} {workflow_id}  target={status.target}  stage={status.stage}", style="bold")
    ]
    if status.plan_hash:
        parts.append(Text(f"plan hash: {status.plan_hash}"))
    parts += [Text(approval.describe_established()) for approval in status.approvals]
    for gate in status.gates:
        body = "\n".join([gate.description, "", "answer with:", *(f"  {line}" for line in gate.how_to_answer)])
        title = f"waiting on gate {gate.name}" + (" (ESCALATED)" if gate.escalated else "")
        # Text, not markup: a gate may show a command's output verbatim (a dry run), brackets and all
        parts.append(Panel(Text(body), title=title, border_style="red" if gate.escalated else "yellow"))
    parts.append(steps)
    bad = [f for f in status.findings if not f.ok]
    if bad:
        parts.append(findings_table(bad))
    return Group(*parts)


def findings_table(findings: list[Finding]) -> Table:
    table = Table(title="findings")
    for column in ("check", "severity", "message", "fix"):
        table.add_column(column)
    for finding in findings:
        style = SEVERITY_STYLES[finding.severity]
        table.add_row(finding.check, Text(finding.severity.value, style=style), finding.message, finding.fix)
    return table


def print_plan(console: Console, plan: Plan, wide: bool = False) -> None:
    console.print(plan_view(plan, wide))


async def watch_status(console: Console, api: TenantflowClient, workflow_id: str, refresh_s: float = 1.0) -> RunStatus:
    """A live view of a run that refreshes until the run ends; returns its last status, read after it ended (a
    status read while it still ran can be a stage behind its end)."""
    current = await api.status(workflow_id)
    with Live(status_view(workflow_id, current), console=console, auto_refresh=False) as live:
        while await api.running(workflow_id):
            await asyncio.sleep(refresh_s)
            current = await api.status(workflow_id)
            live.update(status_view(workflow_id, current), refresh=True)
        current = await api.status(workflow_id)
        live.update(status_view(workflow_id, current), refresh=True)
    return current


async def wait_with_progress(
    console: Console,
    api: TenantflowClient,
    workflow_id: str,
    total_steps: int | None,
    refresh_s: float = 0.5,
    stop_at: Collection[str] = (),
) -> Any:
    """Wait for a run's result with a progress bar of finished steps and the current stage; its status instead
    when it waits at a gate of ``stop_at`` (:meth:`TenantflowClient.result_unless_waiting`)."""
    columns = [
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(workflow_id, total=total_steps)

        def show(current: RunStatus) -> None:
            done = sum(1 for record in current.steps if record.state is StepState.done)
            progress.update(task, completed=done, description=f"{workflow_id} [{current.stage}]")

        return await api.result_unless_waiting(workflow_id, stop_at, show, refresh_s)
