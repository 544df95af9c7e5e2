"""models/explain.py: validation errors as one line per problem, naming the field and the fix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tenantflow.models.explain import SHOWN_CHARS, format_validation_error, shown
from tenantflow.models.tenant import TenantContract
from tests.unit.tenants import tenant_data


def problems(**changes: object) -> str:
    with pytest.raises(ValidationError) as error:
        TenantContract.model_validate(tenant_data(**changes))
    return format_validation_error("tenant.yaml", error.value)


def test_short_values_are_shown_whole() -> None:
    assert shown("tenant-foo") == "'tenant-foo'"


def test_long_values_are_cut_and_their_length_given() -> None:
    text = shown("x" * 500)
    assert text == f"'{'x' * (SHOWN_CHARS - 1)}... (502 chars)"


def test_one_line_per_problem_with_its_dotted_field() -> None:
    lines = problems(slug="Tenant_Foo", capacity__gpu_count=64).splitlines()
    assert lines[0] == "tenant.yaml: 2 problem(s):"
    assert lines[1].startswith("  - slug: String should match pattern")
    assert lines[1].endswith("(got 'Tenant_Foo')")
    assert lines[2] == "  - capacity.gpu_count: unknown field; remove it or check the spelling"


def test_list_items_are_addressed_by_index() -> None:
    users = tenant_data()["users"]
    users[1]["username"] = "Bob"
    assert "  - users.1.username: String should match pattern" in problems(users=users)


def test_value_errors_lose_pydantics_prefix() -> None:
    text = problems(storage__pvc_size="lots")
    assert "  - storage.pvc_size: 'lots' is not a size; write a Kubernetes quantity" in text
    assert "Value error" not in text


def test_model_level_problems_say_top_level() -> None:
    text = problems(slurm__interactive_qos={"priority": 1, "grp_gpus": 128, "max_wall": "01:00:00"})
    assert "  - (top level): slurm.interactive_qos.grp_gpus=128 exceeds capacity.gpus=64" in text


def test_an_oversized_input_is_cut_in_the_message() -> None:
    text = problems(slug="T" * 5000)
    assert "... (5002 chars))" in text
    assert len(text) < 400


def test_a_field_with_an_empty_name_is_named_not_taken_for_the_top_level() -> None:
    with pytest.raises(ValidationError) as error:
        TenantContract.model_validate({**tenant_data(), "": 1})
    assert "  - '': unknown field; remove it or check the spelling" in format_validation_error("body", error.value)
