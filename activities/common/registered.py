"""Declaring an activity under its catalogue name, and reading that name back from the function.

An activity is declared with its catalogue step (``@defn(runbook.KUBE_QUOTA)``), so the name Temporal records
is spelled once, in :mod:`models.runbook` (or :mod:`models.enrollment_steps`). temporalio's public API registers
a function under ``@activity.defn(name=...)`` but offers no public way to ask a function for that name (only the
private ``activity._Definition``). :func:`defn` is ``activity.defn(name=step.name)`` that also remembers the name,
and :func:`registered_name` reads it back; the worker's registry (:mod:`worker.registry`) maps each catalogue step
to its function with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

from tenantflow.models.step import Step

F = TypeVar("F", bound=Callable[..., Any])

_NAMES: dict[Callable[..., Any], str] = {}


def defn(step: Step[Any, Any]) -> Callable[[F], F]:
    """``@activity.defn(name=step.name)``, remembered for :func:`registered_name`."""

    def register(fn: F) -> F:
        _NAMES[fn] = step.name
        return activity.defn(name=step.name)(fn)

    return register


def registered_name(fn: Callable[..., Any]) -> str:
    """The name ``fn`` was declared under with :func:`defn`; ``KeyError`` naming it if it was not."""
    try:
        return _NAMES[fn]
    except KeyError:
        raise KeyError(
            f"{fn.__module__}.{fn.__qualname__} is not declared with activities.common.registered.defn"
        ) from None
