"""Why a run failed, in the operator's words: the step, the error, the fix, and what the rollback did.

Temporal reports a run that failed in a step as ``Activity task failed`` around the step's own error; that wrapper
text alone tells the operator nothing. :class:`RunFailure` is what ``tenantflow result`` prints and
``GET /runs/{id}/result`` answers instead (built by :func:`starter.failures.explain`).
"""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict

FIXES: dict[str, str] = {
    "Forbidden": "the service refused the worker's credential: give it the permission the message names (the "
    "worker's RBAC in deploy/, the service account's role), then start the run again",
    "NotFound": "something the step needs does not exist: create it, or correct the contract field that names it, "
    "then start the run again",
    "Conflict": "the object belongs to someone else: choose another name in the contract or remove the other "
    "owner's object, then start the run again",
    "Invalid": "the service refused the request: correct the contract value the message names (check the file with "
    "`tenantflow validate FILE`), then start the run again",
    "ValidationError": "correct the contract value the message names (`tenantflow validate FILE`), then start the "
    "run again",
    "GateExpired": "nobody answered the gate in time: start the run again and answer its gate before the deadline",
    "TenantHeld": "another run of the tenant holds it (the message names it): wait for it to end (`tenantflow "
    "status` of it) or cancel it, then start the run again",
    "TenantHoldStuck": "the tenant's hold outlived the run that held it: terminate `hold/<slug>` (`temporal workflow "
    "terminate`), then start the run again",
    "RollbackIncomplete": "remove the objects `tenantflow status ID` lists as left (or fix why their undo fails and "
    "answer retry_rollback) before starting again",
}
"""The fix of each non-retryable error type the steps raise, when the error carries no finding with its own fix."""
DEFAULT_FIX = "correct what the message names, then start the run again; the worker's log has every attempt of the step"
ROLLBACK_OF_STAGE: dict[str, str] = {
    "preflight-failed": "nothing was written: the run stopped at its preflight",
    "rejected": "nothing was written: the plan was rejected",
    "refused": "nothing was written: the run was refused before its first step",
    "rolled-back": "everything the run applied was undone, in the runbook's rollback order",
    "rollback-incomplete": "incomplete: some objects are left (`tenantflow status ID` lists them, with why)",
    "stopped-enrolled": "the worker stays enrolled (it was uncordoned): see the findings of `tenantflow status ID`",
}
"""What the rollback did, by the stage the run ended at."""


class RunFailure(Strict):
    """Why a run did not complete."""

    step: str | None = Field(None, description="the step (activity) that failed; none when the run itself stopped")
    error_type: str = Field("", description="the error's type, e.g. Forbidden, SmokeFailed, PreflightFailed")
    message: str = Field(..., description="the error's own message (never the SDK's wrapper text alone)")
    fixes: list[str] = Field(default_factory=list, description="what to do about it")
    stage: str = Field("", description="the stage the run ended at")
    rollback: str = Field("", description="what the rollback did")

    def lines(self, workflow_id: str = "ID") -> list[str]:
        """The failure as the CLI prints it, one line per part."""
        where = f"at step {self.step}" if self.step else f"at stage {self.stage or '?'}"
        error = f"{self.error_type}: {self.message}" if self.error_type else self.message
        lines = [f"run failed {where}: {error}"]
        lines += [f"fix: {fix}" for fix in self.fixes]
        if self.rollback:
            lines.append(f"rollback: {self.rollback.replace('ID', workflow_id)}")
        return lines
