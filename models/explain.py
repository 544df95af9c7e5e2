"""Pydantic validation errors as operator-readable text: one line per problem, naming the field and the fix."""

from __future__ import annotations

from pydantic import ValidationError

SHOWN_CHARS = 60


def shown(value: object) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARS` so an oversized input does not flood the message."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"


def field_path(loc: tuple[int | str, ...]) -> str:
    """Where a problem is: the dotted path of its field (an empty field name shown as ``''``), or ``(top level)``."""
    return ".".join(str(part) if part != "" else "''" for part in loc) or "(top level)"


def format_validation_error(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: {exc.error_count()} problem(s):"]
    for error in exc.errors():
        where = field_path(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field; remove it or check the spelling"
        elif error["type"] == "string_pattern_mismatch":
            message = f"{message} (got {shown(error.get('input'))})"
        lines.append(f"  - {where}: {message}")
    return "\n".join(lines)
