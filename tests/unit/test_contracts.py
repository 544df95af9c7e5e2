"""Contract validation: the examples load; bad input fails naming the field and the fix."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.cli import app
from tenantflow.starter.contracts import ContractError, load_enrollment, parse_contract

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def tenant_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / "tenant-foo.yaml").read_text())
    return data


def test_examples_reproduce_the_runbooks_values() -> None:
    contract = parse_contract(TenantContract, tenant_data(), "tenant-foo.yaml")
    assert contract.slug == "tenant-foo"
    assert contract.capacity.node_count == 8 and contract.capacity.gpus == 64
    assert contract.team_account == "ml-team-foo"
    assert (contract.normal_qos_name, contract.interactive_qos_name) == ("normal-foo", "interactive-foo")
    assert contract.user_budget_gpu_minutes == 240_000
    assert contract.reservation_name == "tenant-foo-reservation"
    assert contract.cluster.kubeconfig is None and contract.cluster.context == "tenant-cluster"
    worker = load_enrollment(EXAMPLES / "worker-forecasting-us.yaml")
    assert worker.worker_identity == "11-forecasting-forecasting-us"
    assert worker.workload_namespaces == ["forecasting"]


def mutate(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(tenant_data())
    node: Any = data
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


BAD_TENANTS = [
    ("bad slug", mutate("slug", "Tenant_Foo"), "slug"),
    ("slug without prefix", mutate("slug", "foo"), "slug"),
    ("gpus not a multiple of gpus per node", mutate("capacity.gpus", 60), "not a multiple of 8"),
    ("unknown sku", mutate("capacity.sku", "h900-8x"), "unknown GPU SKU"),
    ("duplicate usernames", mutate("users.1.username", "alice"), "users"),
    ("malformed ssh key", mutate("users.0.ssh_keys", ["ssh-ed25519 AAAAnotbase64!!"]), "users.0.ssh_keys.0"),
    (
        "ssh key with newline injection",
        mutate("users.0.ssh_keys", [tenant_data()["users"][0]["ssh_keys"][0] + "\nssh-rsa AAAA"]),
        "one line",
    ),
    ("unknown field", mutate("capacity.gpu_count", 64), "unknown field"),
    ("soft above hard", mutate("storage.scratch", {"hard": "45TB", "soft": "50TB"}), "soft quota"),
    ("bad size", mutate("storage.pvc_size", "lots"), "not a size"),
    ("shell in name", mutate("users.0.name", "Alice; rm -rf /"), "users.0.name"),
    ("no users", mutate("users", []), "users"),
    ("wrong type", mutate("capacity.gpus", "sixty-four"), "capacity.gpus"),
]


@pytest.mark.parametrize(("label", "data", "expected"), BAD_TENANTS, ids=[case[0] for case in BAD_TENANTS])
def test_bad_tenant_contracts_name_the_field(label: str, data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ContractError) as error:
        parse_contract(TenantContract, data, "bad.yaml")
    assert expected in str(error.value), f"{label}: {error.value}"


def test_a_kubeconfig_path_in_a_contract_is_refused_naming_the_field_and_the_fix() -> None:
    with pytest.raises(
        ContractError,
        match=r"cluster\.kubeconfig: a contract cannot choose a kubeconfig file; "
        r"remove it and name a cluster of the worker's registry",
    ):
        parse_contract(TenantContract, mutate("cluster.kubeconfig", "/tmp/evil"), "evil.yaml")
    worker = yaml.safe_load((EXAMPLES / "worker-forecasting-us.yaml").read_text())
    worker["hub"]["kubeconfig"] = "/tmp/evil"
    with pytest.raises(ContractError, match=r"hub\.kubeconfig"):
        parse_contract(WorkerEnrollment, worker, "w.yaml")


def test_evict_on_release_true_is_accepted_for_a_plan_warning() -> None:
    """The approver sees it as a warning in the plan (capacity.preflight and capacity.plan), not a refusal."""
    data = mutate("capacity.evict_on_release", True)
    assert parse_contract(TenantContract, data, "t.yaml").capacity.evict_on_release is True


def test_hub_and_worker_must_differ() -> None:
    data = yaml.safe_load((EXAMPLES / "worker-forecasting-us.yaml").read_text())
    data["worker"]["context"] = "hub"
    with pytest.raises(ContractError, match="Hub cannot be its own worker"):
        parse_contract(WorkerEnrollment, data, "w.yaml")


def test_schema_command_prints_valid_json_schemas() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    schemas = json.loads(result.stdout)
    assert {"TenantContract", "WorkerEnrollment"} <= set(schemas)
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schemas["TenantContract"])
    good = tenant_data() | {"cluster": {"context": "tenant-cluster"}}
    assert not list(validator.iter_errors(good))
    assert list(validator.iter_errors(good | {"slug": "BAD"}))


def test_validate_command_exits_2_with_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(mutate("capacity.gpus", 60)))
    result = CliRunner().invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    assert "capacity" in result.output and "not a multiple of 8" in result.output
