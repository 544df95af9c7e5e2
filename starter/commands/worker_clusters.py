"""Commands of a worker cluster's life in the Hub: enroll (with its yes/no gates) and decommission (the worker's
record read by the worker, ``WorkerClusterRecords``: this process needs only Temporal access)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tenantflow.starter.commands.gates import gate_command
from tenantflow.starter.commands.runs import start_from_file, start_teardown
from tenantflow.starter.contracts import load_enrollment
from tenantflow.starter.output import OutputOpt, WideOpt, run
from tenantflow.starter.records import CurrentContextOpt, WorkerClusterOpt, enrolled_contract, named_cluster
from tenantflow.starter.run_kinds import ENROLLMENT_GATES

GATE_HELP = {
    "submissions_paused": "Confirm every Hub submission path of the organization is paused (brownfield).",
    "approve_adoption": "Approve adopting the preset objects whose diff is empty (brownfield).",
    "uncordon": "Recorded work is verified: enable Hub dispatch to the worker.",
    "resume_submissions": "The canary passed: resume the organization's submission paths.",
}
GATE_COMMANDS: dict[str, Callable[..., None]] = {gate: gate_command(gate, GATE_HELP[gate]) for gate in ENROLLMENT_GATES}
"""One command per yes/no gate of an enrollment, by gate name."""


def enroll(
    file: Path,
    wait: Annotated[bool, typer.Option(help="wait for the bootstrap plan and print it")] = True,
    output: OutputOpt = "text",
    wide: WideOpt = False,
) -> None:
    """Start enrolling a worker cluster into the Hub (greenfield or brownfield, as the file says)."""

    run(
        start_from_file(file, load_enrollment, lambda api, contract: api.start_enrollment(contract), wait, output, wide)
    )


def decommission(
    namespace: str,
    worker_name: str,
    contract: Annotated[
        Path | None,
        typer.Option(
            help="the enrollment contract; default: the worker's record (read by the worker in the worker cluster "
            "--context names, else in that of the latest enroll/NS/WORKER run), else the input of that run"
        ),
    ] = None,
    kubeconfig: CurrentContextOpt = None,
    context: WorkerClusterOpt = None,
    output: OutputOpt = "text",
) -> None:
    """Decommission a worker: cordon, drain, remove from the Hub, then a gated `worker reset`."""
    workercluster = f"{namespace}/{worker_name}"
    run(
        start_teardown(
            contract,
            load_enrollment,
            lambda api: enrolled_contract(api, named_cluster(kubeconfig, context), namespace, worker_name),
            lambda enrollment: f"{enrollment.tenant_namespace}/{enrollment.worker_name}",
            workercluster,
            lambda api, enrollment: api.start_decommission(enrollment),
            output,
        )
    )
