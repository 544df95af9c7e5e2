"""A failed run explained (:class:`models.failure.RunFailure`): the cause chain Temporal reports, read for the
step, the innermost error and the fix.

A run that fails in a step ends with a ``WorkflowFailureError`` whose cause is an ``ActivityError`` (message
``Activity task failed``, the step as its ``activity_type``) around the step's own ``ApplicationError`` (its type,
message and details); a run that stops itself (preflight errors, a failed validation) ends with its own
``ApplicationError``. The chain is each exception's ``cause`` (Temporal's Python SDK, ``temporalio.exceptions``:
https://python.temporal.io/temporalio.exceptions.FailureError.html). The stage the run ended at is its ``Stage``
search attribute (``Client.describe``), which says what the rollback did.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TerminatedError

from tenantflow.models.failure import DEFAULT_FIX, FIXES, ROLLBACK_OF_STAGE, RunFailure


def causes(exc: BaseException) -> list[BaseException]:
    """``exc``'s causes, outermost first (``exc`` itself unless it is the client's ``WorkflowFailureError``)."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc.__cause__ if isinstance(exc, WorkflowFailureError) else exc
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__
    return chain


def finding_fixes(details: Any) -> list[str]:
    """The fixes of the failed findings an error carries as details (``check: fix``)."""
    fixes: list[str] = []
    for detail in details or ():
        if isinstance(detail, dict) and detail.get("fix") and not detail.get("ok", False):
            fixes.append(f"{detail.get('check', '?')}: {detail['fix']}")
    return fixes


def explain(exc: BaseException, stage: str = "") -> RunFailure:
    """Why the run whose failure is ``exc`` (ended at ``stage``) did not complete."""
    chain = causes(exc)
    step = next((c.activity_type for c in chain if isinstance(c, ActivityError)), None)
    innermost = chain[-1] if chain else exc
    rollback = ROLLBACK_OF_STAGE.get(stage, "")
    if any(isinstance(c, CancelledError) for c in chain):
        return RunFailure(
            step=step, error_type="Cancelled", message="the run was cancelled", stage=stage, rollback=rollback
        )
    if any(isinstance(c, TerminatedError) for c in chain):
        return RunFailure(
            step=step,
            error_type="Terminated",
            message=str(innermost) or "the run was terminated",
            stage=stage,
            rollback=rollback,
            fixes=[
                "a terminated run is not rolled back: check `tenantflow drift` for what it left, then start it again"
            ],
        )
    applications = [c for c in chain if isinstance(c, ApplicationError)]
    error = applications[-1] if applications else innermost
    error_type = (error.type or "") if isinstance(error, ApplicationError) else type(error).__name__
    message = getattr(error, "message", None) or str(error) or error_type
    fixes = [fix for app in applications for fix in finding_fixes(app.details)]
    if not fixes and "(fix: " not in message:
        fixes = [FIXES.get(error_type, DEFAULT_FIX)]
    return RunFailure(step=step, error_type=error_type, message=message, fixes=fixes, stage=stage, rollback=rollback)
