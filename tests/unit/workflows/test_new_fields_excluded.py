"""A field some recorded activity input lacks must be left out of the payload at its default (``exclude_if``).

Every activity input in tests/histories is read as the model it is (the catalogue step's input), walking nested
models, and the keys every payload of a model carries are kept. A field missing from some recorded payload was
added after it was recorded (or is left out when unset): without ``exclude_if`` its default would be written into
every payload, so each recorded activity would be given other arguments than recorded (strict replay fails for
every history), and a worker of the previous build, whose closed models refuse unknown keys, could not read what
the new build sends it. See workflows/README.md.
"""

from __future__ import annotations

import types
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Field
from temporalio.client import WorkflowHistory

from tenantflow.models.results import UndoRecord
from tenantflow.models.runbook import CATALOGUE
from tenantflow.models.tenant import TenantContract
from tenantflow.worker.codec import PLAIN

HISTORIES = Path(__file__).resolve().parents[2] / "histories"
Seen = dict[type[BaseModel], set[str]]
"""For each model, the keys every one of its recorded payloads carries."""


def keys_of(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def fits(annotation: Any, value: Any) -> bool:
    """Whether ``value`` (JSON) can be a value of ``annotation``'s shape: a model's object, a list, a mapping."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return isinstance(value, dict) and set(value) <= keys_of(annotation)
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    return not isinstance(value, dict | list)


def walk_value(annotation: Any, value: Any, seen: Seen) -> None:
    """Walk ``value`` (JSON) as a value of ``annotation``, noting the keys of each model object in it."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        walk(annotation, value, seen)
    elif origin is Annotated:
        walk_value(args[0], value, seen)
    elif origin in (Union, types.UnionType):
        for arg in args:
            if value is not None and fits(arg, value):
                walk_value(arg, value, seen)
                break
    elif origin in (list, tuple, set, frozenset) and isinstance(value, list) and args:
        for item in value:
            walk_value(args[0], item, seen)
    elif origin is dict and isinstance(value, dict) and len(args) == 2:
        for item in value.values():
            walk_value(args[1], item, seen)


def walk(model: type[BaseModel], data: Any, seen: Seen) -> None:
    """Note the keys ``data`` (a JSON object of ``model``) carries, and those of the models nested in it."""
    if not isinstance(data, dict):
        return
    seen[model] = seen[model] & set(data) if model in seen else set(data)
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in data:
            walk_value(field.annotation, data[key], seen)


def step_inputs() -> dict[str, type[Any]]:
    """Every catalogue step's and undo's input type by activity name (activities since retired are not here)."""
    steps = [*CATALOGUE.values(), *(step.undo for step in CATALOGUE.values() if step.undo is not None)]
    return {step.name: step.input for step in steps}


@cache
def carried_by_the_histories() -> Seen:
    """Every model in a recorded activity input (what workflow code writes; a workflow's own input is written by
    its client and only read), with the keys each of its payloads carries."""
    seen: Seen = {}
    activities = step_inputs()
    for path in sorted(HISTORIES.glob("*.json")):
        for event in WorkflowHistory.from_json(path.stem, path.read_text()).events:
            scheduled = event.activity_task_scheduled_event_attributes
            if (
                event.HasField("activity_task_scheduled_event_attributes")
                and scheduled.activity_type.name in activities
            ):
                for value in PLAIN.payload_converter.from_payloads(list(scheduled.input.payloads)):
                    walk_value(activities[scheduled.activity_type.name], value, seen)
    return seen


def unguarded(model: type[BaseModel], carried: set[str]) -> list[str]:
    """The fields of ``model`` some recorded payload lacks that are written at their default (no ``exclude_if``); undo
    records write only the keys that were set (:class:`~tenantflow.models.results.UndoRecord`)."""
    if issubclass(model, UndoRecord):
        return []
    return [
        f"{model.__name__}.{name}"
        for name, field in model.model_fields.items()
        if (field.alias or name) not in carried and field.exclude_if is None and not field.exclude
    ]


def test_the_histories_carry_the_tenant_contract() -> None:
    assert keys_of(TenantContract) & carried_by_the_histories().get(TenantContract, set())


def test_every_field_a_recorded_payload_lacks_is_left_out_at_its_default() -> None:
    missing = [name for model, carried in carried_by_the_histories().items() for name in unguarded(model, carried)]
    assert not missing, f"add exclude_if (left out at the default) to {', '.join(missing)}: see workflows/README.md"


class GrownContract(TenantContract):
    """A contract with a field added since the histories were recorded, the way it must not be added."""

    sponsor: str = Field("")
    cost_centre: str = Field("", exclude_if=lambda centre: not centre)


def test_a_new_field_without_exclude_if_is_caught() -> None:
    carried = carried_by_the_histories()[TenantContract]
    assert unguarded(GrownContract, carried) == ["GrownContract.sponsor"]
