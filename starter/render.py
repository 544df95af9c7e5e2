"""Rich renderings of plans, run status and handover sheets for the terminal."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from models.plan import Action, Plan
from models.status import RunStatus

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
        findings = Table(title="findings")
        for column in ("check", "severity", "message", "fix"):
            findings.add_column(column)
        for finding in bad:
            findings.add_row(finding.check, finding.severity.value, finding.message, finding.fix)
        parts.append(findings)
    return Group(*parts)


def print_plan(console: Console, plan: Plan) -> None:
    console.print(plan_table(plan))
