"""``tenantflow doctor --context NAME``: probe an estate's every assumption before the first onboarding.

Reads, with the worker's configuration (``TENANTFLOW_ENV_FILE``, e.g. the lab's ``lab.env``) and from this
process, the cluster NAME of the worker's cluster registry and the services of the worker's settings; runs every
check of :data:`starter.doctor.checks.CHECKS` and prints one line each (check, ok/FAIL/skip, what was found, the
fix on failure), or JSON with ``-o json``. Writes nothing. Exit 0: every check passed (or was skipped with a
reason); 3: an incompatibility (a check failed, a probe that could not read included); 2: the registry has no
cluster NAME.
"""

from __future__ import annotations

from typing import Annotated

import typer
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import clusters
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.output import EXIT_BAD_INPUT, OutputOpt, console, emit, errors
from tenantflow.starter.records import read_env_file

ContextOpt = Annotated[
    str,
    typer.Option(
        "--context", help="the cluster to probe, as the worker's cluster registry names it (e.g. tenant-cluster)"
    ),
]


def doctor(context: ContextOpt, output: OutputOpt = "text") -> None:
    """Probe the estate read-only before the first onboarding: one line per check with its fix (exit 3 on any
    incompatibility)."""
    from tenantflow.starter.doctor.checks import CHECKS
    from tenantflow.starter.doctor.report import Estate, exit_code, run_checks

    read_env_file()
    target = KubeTarget(context=context)
    try:
        clusters.resolve(target)
    except ApplicationError as exc:
        errors.print(f"--context {context}: {exc.message}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    results = run_checks(Estate(target), CHECKS)
    if output == "json":
        emit({"context": context, "checks": [r.as_json() for r in results]}, output)
    else:
        for result in results:
            console.print(result.line(), markup=False, highlight=False, soft_wrap=True)
        bad = sum(r.failed for r in results)
        console.print(
            f"{len(results)} checks on {context}: {bad} failed" + (": fix them before onboarding" if bad else ""),
            markup=False,
        )
    raise typer.Exit(exit_code(results))
