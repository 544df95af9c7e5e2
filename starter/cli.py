"""``tenantflow``: the operator's command line (typer + rich).

This module assembles the app: the commands of :mod:`starter.commands`, in the order ``--help`` lists them,
the commands other installed packages offer through the entry point group ``tenantflow.commands`` (the
bench's ``tenantflow bench``), and the ``lab`` group. Output and exit codes: :mod:`starter.output`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer

from tenantflow.starter.commands import (
    changes,
    contracts,
    doctor,
    drift,
    gates,
    runs,
    services,
    setup,
    tenants,
    worker_clusters,
)
from tenantflow.starter.extras import require_extra
from tenantflow.starter.output import EXIT_REFUSED, OutputOpt, console, emit, errors
from tenantflow.worker.program import run_program

PLUGIN_GROUP = "tenantflow.commands"
"""Entry point group of commands from other packages: ``name = "module:function"``, a typer command function."""


class Tenantflow(typer.Typer):
    """The CLI app; as a program it ends through :func:`worker.program.run_program` (output flushed, no
    interpreter finalization, so the Temporal client's native threads cannot turn a finished command into exit
    status 134)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        run_program(lambda: super(Tenantflow, self).__call__(*args, **kwargs))


def plugin_commands() -> list[tuple[str, Callable[..., Any]]]:
    """The commands installed packages register under :data:`PLUGIN_GROUP`, by name."""
    return [(point.name, point.load()) for point in sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: p.name)]


COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("worker", services.worker),
    ("dev-server", services.dev_server),
    ("codec-server", services.codec_server),
    ("setup", setup.setup),
    ("doctor", doctor.doctor),
    ("schema", contracts.schema),
    ("validate", contracts.validate),
    ("plan", contracts.plan),
    ("onboard", tenants.onboard),
    ("apply", changes.apply),
    ("enroll", worker_clusters.enroll),
    ("decommission", worker_clusters.decommission),
    ("status", runs.status),
    ("approve", gates.approve),
    ("reject", gates.reject),
    *((gate.replace("_", "-"), command) for gate, command in worker_clusters.GATE_COMMANDS.items()),
    ("smoke-failed", gates.smoke_failed),
    ("confirm-purge", gates.confirm_purge),
    ("renew", tenants.renew),
    ("offboard", tenants.offboard),
    ("retry-rollback", gates.retry_rollback),
    ("cancel", runs.cancel),
    ("result", runs.result),
    ("handover", tenants.handover),
    ("tenants", tenants.tenants),
    ("drift", drift.drift),
    ("list", runs.list_runs),
    ("serve-api", services.serve_api),
    ("token", services.token),
    *plugin_commands(),
    ("demo", services.demo),
]

app = Tenantflow(help="Durable, human-gated GPU-cluster runbooks on Temporal.", no_args_is_help=True)
for _name, _command in COMMANDS:
    app.command(_name)(_command)


lab_app = typer.Typer(help="The lab: local stand-ins for every system the workflows drive.")
app.add_typer(lab_app, name="lab")
StateDirOpt = Annotated[Path, typer.Option(help="where the lab keeps its state, logs and pids")]


@lab_app.callback()
def lab_needs_its_extra() -> None:
    require_extra("lab", "tenantflow lab")


@lab_app.command("up")
def lab_up(
    state_dir: StateDirOpt = Path(".state/lab"),
    output: OutputOpt = "text",
    reset: Annotated[bool, typer.Option(help="stop the lab, wipe DIR and start fresh")] = False,
    authentik: Annotated[
        str | None,
        typer.Option(
            help="the Authentik release to play: 2024.10 or 2025.10 (groups have one parent) or current (parents); "
            "default: the last run's, else current"
        ),
    ] = None,
    slurm_operator: Annotated[
        str | None,
        typer.Option(
            help="the Slurm operator to play: configmap (a ConfigMap rendered into a file slurm.conf includes) or "
            "slinky (Slinky's Controller extraConf); lab.env sets the worker's partition backend to match; "
            "default: the last run's, else configmap"
        ),
    ] = None,
) -> None:
    """Start every stand-in on loopback (continuing the world DIR holds); writes DIR/kubeconfig and DIR/lab.env."""
    from tenantflow.lab.authentik.versions import MODES
    from tenantflow.lab.config import SLURM_OPERATORS
    from tenantflow.lab.supervisor import LabStateError, up

    if authentik is not None and authentik not in MODES:
        errors.print(f"[red]--authentik must be one of {', '.join(MODES)}[/red]")
        raise typer.Exit(EXIT_REFUSED)
    if slurm_operator is not None and slurm_operator not in SLURM_OPERATORS:
        errors.print(f"[red]--slurm-operator must be one of {', '.join(SLURM_OPERATORS)}[/red]")
        raise typer.Exit(EXIT_REFUSED)
    try:
        endpoints = up(
            state_dir,
            reset=reset,
            authentik_version=MODES[authentik] if authentik else None,
            slurm_operator="slinky" if slurm_operator == "slinky" else "configmap" if slurm_operator else None,
        )
    except LabStateError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_REFUSED) from None
    if output == "json":
        emit(
            endpoints.model_dump(mode="json", exclude={"authentik_token", "weka_password", "ldap_bind_password"}),
            output,
        )
        return
    console.print(f"lab up in {endpoints.state_dir}")
    console.print(f"  kubeconfig: {endpoints.kubeconfig} (contexts {', '.join(endpoints.kube_urls)})")
    console.print(f"  authentik:  {endpoints.authentik_url}\n  weka:       {endpoints.weka_url}")
    console.print(f"  ldap:       {endpoints.ldap_url}\n  slurm:      SLURM_CONF={endpoints.slurm_conf}")
    console.print(f"  env:        {endpoints.state_dir / 'lab.env'}")


@lab_app.command("down")
def lab_down(state_dir: StateDirOpt = Path(".state/lab")) -> None:
    """Stop every lab process recorded in DIR."""
    from tenantflow.lab.supervisor import down

    stopped = down(state_dir)
    console.print(f"stopped {len(stopped)} process(es): {', '.join(stopped) or 'none'}")
