"""What a rollback that could not finish reports: every object it left, with where it lives and why."""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict


class Leftover(Strict):
    """One object a rollback (or teardown) could not remove: its undo failed after its retries."""

    layer: str = Field(..., description="capacity, identity, kube, slurm, storage, login, hub, worker")
    kind: str
    name: str
    namespace: str | None = None
    step: str = Field(..., description="the apply step whose undo failed, e.g. slurm.accounts")
    why: str = Field(..., description="the undo's last error")

    def describe(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.layer} {self.kind} {where}{self.name} ({self.step}: {self.why})"
