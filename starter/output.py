"""How the ``tenantflow`` CLI answers: text or JSON on stdout, messages on stderr, and exit codes.

``--output``/``-o`` takes the formats of :data:`OutputFormat` (``json`` is machine-readable on every
command); any other value is refused before the command runs (exit 2, naming the supported formats).

Exit codes scripts can rely on (the README's table compares them with terraform's and kubectl's):

* 0 success; ``plan`` computed a plan, whatever it changes (no "changes present" code)
* 1 unexpected error (Temporal or a service unreachable, a bug)
* 2 bad usage or input: an unknown option, an unsupported ``--output``, a contract that does not validate
* 3 the run failed, was rejected or rolled back; ``plan`` found preflight errors (the run would fail there);
  ``drift`` found drift
* 4 refused: a run for the target is already active, a stale plan hash, a gate that is not open,
  a run that has not finished (``handover``; ``result`` of a run waiting at ``smoke_failed``), a port
  ``dev-server`` would listen on is taken
* 5 no such run
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.models.failure import RunFailure
from tenantflow.models.status import RunOutcome
from tenantflow.starter.client import RunAlreadyActive
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.failures import explain
from tenantflow.worker.codec import CodecError
from tenantflow.worker.signatures import ProofError

T = TypeVar("T")

EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3
EXIT_REFUSED = 4
EXIT_NOT_FOUND = 5

console = Console()
errors = Console(stderr=True)

OutputFormat = Literal["text", "json"]
OutputOpt = Annotated[OutputFormat, typer.Option("--output", "-o", help="text or json (machine-readable)")]
WaitOpt = Annotated[bool, typer.Option(help="wait for the plan and print it")]
WideOpt = Annotated[bool, typer.Option("--wide", help="every detail of every planned object, not one line each")]


class Refused(RuntimeError):
    """The request makes no sense in the run's current state (exit 4)."""


class WorkerError(RuntimeError):
    """The worker could not do what this process asked of it (exit 1); the message names the worker's step and
    error, and what to set where."""


class RunFailed(RuntimeError):
    """A run that did not complete, explained (exit 3): the step, the error, the fix, what the rollback did."""

    def __init__(self, workflow_id: str, failure: RunFailure) -> None:
        super().__init__(failure.message)
        self.workflow_id = workflow_id
        self.failure = failure


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning known failures into messages and exit codes."""
    try:
        return asyncio.run(coro)
    except ContractError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (ProofError, CodecError) as exc:  # an approval key or codec setting that cannot be used
        errors.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (RunAlreadyActive, Refused) as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_REFUSED) from None
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        errors.print(f"[red]refused: {getattr(cause, 'message', None) or cause or exc}[/red]")
        raise typer.Exit(EXIT_REFUSED) from None
    except WorkerError as exc:
        errors.print(str(exc), style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_ERROR) from None
    except (WorkflowFailureError, RunFailed) as exc:
        failure = exc.failure if isinstance(exc, RunFailed) else explain(exc)
        for line in failure.lines(exc.workflow_id if isinstance(exc, RunFailed) else "ID"):
            errors.print(line, style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_RUN_FAILED) from None
    except RPCError as exc:
        errors.print(f"[red]temporal: {exc.message}[/red]")
        raise typer.Exit(EXIT_NOT_FOUND if exc.status == RPCStatusCode.NOT_FOUND else EXIT_ERROR) from None


def emit(data: Any, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        console.print(data)


def answered(workflow_id: str, answer: str, output: str) -> None:
    emit({"workflow_id": workflow_id, "answer": answer} if output == "json" else answer, output)


def print_outcome(outcome: Any, output: str) -> None:
    """A run's result: JSON, or its handover sheet (its approvals section marks the verified approvers), else its
    status and message; then each approval whose approver was only declared, saying so."""
    if output == "json":
        emit(outcome.model_dump(mode="json"), output)
    elif getattr(outcome, "handover", None) is not None:
        console.print(outcome.handover.markdown, markup=False, highlight=False)
    else:
        console.print(f"{outcome.status}: {getattr(outcome, 'message', '')}")
    declared = [a for a in getattr(outcome, "approvals", []) if a.established == "declared"]
    if output != "json":
        for approval in declared:
            console.print(f"note: {approval.describe_established()}", markup=False, highlight=False)
    if outcome.status != RunOutcome.completed:
        raise typer.Exit(EXIT_RUN_FAILED)
