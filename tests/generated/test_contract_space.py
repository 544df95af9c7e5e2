"""Every drawn valid contract validates, survives the JSON round trip a workflow input makes, is accepted by the
published JSON Schema, and derives the names, sizes and durations its fields say (expected values from the draw)."""

from __future__ import annotations

import jsonschema
from hypothesis import given

from tenantflow.models.durations import duration_minutes
from tenantflow.models.tenant import TenantContract
from tenantflow.models.units import parse_size
from tests.generated.profile import GENERATED
from tests.generated.strategies import Drawn, contract_of, contracts

SCHEMA = jsonschema.Draft202012Validator(TenantContract.model_json_schema())


def at(data: dict[str, object], path: str) -> object:
    node: object = data
    for part in path.split("."):
        assert isinstance(node, dict)
        node = node[part]
    return node


@GENERATED
@given(contracts())
def test_a_valid_contract_reads_back_the_same_from_its_json_and_passes_the_published_schema(drawn: Drawn) -> None:
    contract = contract_of(drawn)
    again = TenantContract.model_validate_json(contract.model_dump_json())
    assert again == contract
    assert again.model_dump(mode="json") == contract.model_dump(mode="json")
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in SCHEMA.iter_errors(drawn.data)]
    assert not errors, errors


@GENERATED
@given(contracts())
def test_derived_names_and_shares_follow_the_contract(drawn: Drawn) -> None:
    contract, data = contract_of(drawn), drawn.data
    slug, short = data["slug"], data["slug"].removeprefix("tenant-")
    assert (contract.capacity.node_count, contract.capacity.gpus_per_node) == (drawn.node_count, drawn.gpus_per_node)
    assert contract.namespace == slug and contract.reservation_name == f"{slug}-reservation"
    assert (contract.normal_qos_name, contract.interactive_qos_name) == (f"normal-{short}", f"interactive-{short}")
    team = data["slurm"].get("team_account")
    expected_team = None if team == "" else team or f"ml-team-{short}"
    assert contract.team_account == expected_team
    assert contract.user_account == (expected_team or slug)
    assert contract.user_budget_gpu_minutes == data["slurm"]["budget_gpu_minutes_total"] // len(data["users"])
    assert contract.login_hostname == data["login"].get("hostname", f"login.{slug}.example.internal")
    assert contract.display_name == data["display_name"].strip()
    assert contract.usernames == [user["username"] for user in data["users"]]


@GENERATED
@given(contracts())
def test_sizes_and_durations_read_as_written(drawn: Drawn) -> None:
    contract = contract_of(drawn).model_dump(mode="json")
    for path, size in drawn.bytes.items():
        assert parse_size(str(at(contract, path))) == size, path
    for path, minutes in drawn.minutes.items():
        assert duration_minutes(str(at(contract, path))) == minutes, path
