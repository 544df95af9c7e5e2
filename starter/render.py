"""Rich renderings for the terminal: plans and plan diffs, run status, live views and progress bars."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tenantflow.models.plan import Action, Plan
from tenantflow.models.results import Finding
from tenantflow.models.status import RunStatus

if TYPE_CHECKING:
    from tenantflow.starter.client import TenantflowClient

ACTION_STYLE = {Action.create: "green", Action.adopt: "cyan", Action.update: "yellow",
                Action.unchanged: "dim", Action.delete: "red", Action.leave: "dim"}
ACTION_MARK = {Action.create: "+", Action.adopt: "&", Action.update: "~", Action.unchanged: "=",
               Action.delete: "-", Action.leave: "."}


def plan_table(plan: Plan) -> Table:
    table = Table(title=f"{plan.title}  (plan hash {plan.plan_hash})", show_lines=False)
    for column in ("", "layer", "kind", "object", "details"):
        table.add_column(column)
    for step in plan.steps:
        style = ACTION_STYLE[step.action]
        name = f"{step.namespace}/{step.name}" if step.namespace else step.name
        details = ", ".join(f"{k}={v}" for k, v in step.detail.items())
        table.add_row(Text(ACTION_MARK[step.action], style=style), step.layer, step.kind,
                      Text(name, style=style), details)
    counts = {a: sum(1 for s in plan.steps if s.action == a) for a in Action}
    table.caption = "  ".join(f"{ACTION_MARK[a]} {a.value}: {n}" for a, n in counts.items() if n)
    return table


def status_view(workflow_id: str, status: RunStatus) -> Group:
    steps = Table(title="steps")
    for column in ("step", "state", "took", "what"):
        steps.add_column(column)
    for record in status.steps:
        took = ""
        if record.finished_at is not None:
            took = f"{(record.finished_at - record.started_at).total_seconds():.1f}s"
        style = {"done": "green", "failed": "red", "running": "yellow"}.get(record.state, "")
        steps.add_row(record.name, Text(record.state, style=style), took, record.summary)
    parts: list[Panel | Table | Text] = [
        Text(f"{status.workflow} {workflow_id}  target={status.target}  stage={status.stage}", style="bold")]
    if status.plan_hash:
        parts.append(Text(f"plan hash: {status.plan_hash}"))
    for gate in status.gates:
        body = "\n".join([gate.description, "", "answer with:", *(f"  {line}" for line in gate.how_to_answer)])
        title = f"waiting on gate {gate.name}" + (" (ESCALATED)" if gate.escalated else "")
        parts.append(Panel(body, title=title, border_style="red" if gate.escalated else "yellow"))
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
        style = {"error": "red", "warning": "yellow"}.get(finding.severity.value, "")
        table.add_row(finding.check, Text(finding.severity.value, style=style), finding.message, finding.fix)
    return table


def plan_diff(plan: Plan) -> Group:
    """The plan as a per-layer diff, like ``terraform plan``: one colored line per object."""
    lines: list[Text] = [Text(f"{plan.title}  (plan hash {plan.plan_hash})", style="bold")]
    for layer, steps in plan.by_layer().items():
        lines.append(Text(f"\n# {layer}", style="bold"))
        for step in steps:
            name = f"{step.namespace}/{step.name}" if step.namespace else step.name
            line = Text(f"  {ACTION_MARK[step.action]} {step.kind} {name}", style=ACTION_STYLE[step.action])
            if step.detail:
                line.append("  " + ", ".join(f"{k}={v}" for k, v in step.detail.items()), style="dim")
            lines.append(line)
    counts = {a: sum(1 for s in plan.steps if s.action == a) for a in Action}
    lines.append(Text("\nPlan: " + ", ".join(f"{n} to {a.value}" for a, n in counts.items() if n), style="bold"))
    lines.extend(Text(note, style="dim") for note in plan.notes)
    return Group(*lines)


def print_plan(console: Console, plan: Plan) -> None:
    console.print(plan_table(plan))


async def watch_status(console: Console, api: TenantflowClient, workflow_id: str,
                       refresh_s: float = 1.0) -> RunStatus:
    """A live view of a run that refreshes until the run ends; returns its last status."""
    current = await api.status(workflow_id)
    with Live(status_view(workflow_id, current), console=console, auto_refresh=False) as live:
        while await api.running(workflow_id):
            await asyncio.sleep(refresh_s)
            current = await api.status(workflow_id)
            live.update(status_view(workflow_id, current), refresh=True)
    return current


async def wait_with_progress(console: Console, api: TenantflowClient, workflow_id: str,
                             total_steps: int | None, refresh_s: float = 0.5) -> Any:
    """Wait for a run's result with a progress bar of finished steps and the current stage."""
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(workflow_id, total=total_steps)
        result = asyncio.ensure_future(api.result(workflow_id))
        while not result.done():
            current = await api.status(workflow_id)
            done = sum(1 for record in current.steps if record.state == "done")
            progress.update(task, completed=done, description=f"{workflow_id} [{current.stage}]")
            await asyncio.wait([result], timeout=refresh_s)
        return result.result()
