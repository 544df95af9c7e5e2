"""The verdicts of the layers' checks as :class:`models.results.Finding` values, built one way.

A passing check is ``info`` without a fix; a failing one is an ``error`` with what to do about it. Warnings and
other shapes are written out where they are made.
"""

from __future__ import annotations

from tenantflow.models.results import Finding, Severity


def finding(check: str, ok: bool, message: str, fix: str = "") -> Finding:
    """The verdict of ``check``: info when ``ok`` (the fix dropped), else an error with ``fix``."""
    return Finding(
        check=check, ok=ok, severity=Severity.info if ok else Severity.error, message=message, fix="" if ok else fix
    )


def error(check: str, message: str, fix: str) -> Finding:
    """A failed ``check``: an error with its fix."""
    return finding(check, False, message, fix)


def verdict(check: str, problem: str | None, ok_message: str, fix: str = "") -> Finding:
    """``check`` passed with ``ok_message`` when there is no ``problem``, else failed with the problem and ``fix``."""
    return finding(check, problem is None, ok_message if problem is None else problem, fix)
