"""Label selectors (``=, ==, !=, in, notin, key, !key``) and field selectors (``=, ==, !=``).

Both parse once into a predicate over an object dict. Field selectors accept any
dotted path (``metadata.name``, ``metadata.namespace``, ``spec.nodeName``,
``status.phase`` ...); a missing field compares as the empty string, as upstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tenantflow.lab.kubeapi.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    set_match = _SET_RE.match(term)
    if set_match:
        key, op, raw = set_match.groups()
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, value = (part.strip() for part in term.split(op, 1))
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    if re.fullmatch(r"[A-Za-z0-9_./-]+", term):
        return lambda labels: term in labels
    raise bad_request(f"unable to parse requirement: invalid label selector term {term!r}")


def label_selector(selector: str | None) -> Predicate:
    """Predicate for a ``labelSelector`` query string (empty matches everything)."""
    terms = [_label_term(t) for t in _split_terms(selector or "")]

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(term(labels) for term in terms)

    return match


def field_value(obj: dict[str, Any], path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def field_selector(selector: str | None) -> Predicate:
    """Predicate for a ``fieldSelector`` query string."""
    checks: list[tuple[str, bool, str]] = []
    for term in _split_terms(selector or ""):
        for op in ("!=", "==", "="):
            if op in term:
                path, value = (part.strip() for part in term.split(op, 1))
                checks.append((path, op != "!=", value))
                break
        else:
            raise bad_request(f"invalid field selector term {term!r}")

    def match(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in checks)

    return match
