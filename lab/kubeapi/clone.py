"""Copies of stored objects: JSON trees (dicts, lists and immutable scalars), copied about twice as fast as
``copy.deepcopy`` (no memo, no dispatch on arbitrary types). The API server hands out and keeps copies at every
read, write and event, so this is most of the emulator's copying."""

from __future__ import annotations

from typing import Any, TypeVar, cast

T = TypeVar("T")


def clone(value: T) -> T:
    """A copy of ``value`` sharing nothing mutable with it; strings, numbers, booleans and None are shared."""
    copied: Any = value
    if isinstance(value, dict):
        copied = {key: clone(item) for key, item in value.items()}
    elif isinstance(value, list):
        copied = [clone(item) for item in value]
    return cast(T, copied)
