"""Results of ensure activities, checks and whole runs."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from tenantflow.models.base import Strict


class Outcome(StrEnum):
    created = "created"
    adopted = "adopted"
    updated = "updated"
    unchanged = "unchanged"
    deleted = "deleted"
    absent = "absent"


class EnsureResult(Strict):
    """What one idempotent ensure did to one object."""

    layer: str
    kind: str
    name: str
    namespace: str | None = None
    outcome: Outcome
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def wrote(self) -> bool:
        return self.outcome not in (Outcome.unchanged, Outcome.absent)


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


class Finding(Strict):
    """One check's verdict, with what to do about it."""

    check: str
    ok: bool
    severity: Severity = Severity.error
    message: str
    fix: str = ""
