"""models/tenant.py: the names every layer derives from a contract, and bad input refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tenantflow.models.tenant import TenantContract
from tests.unit.tenants import tenant, tenant_data


def test_derived_names_follow_the_runbook() -> None:
    contract = tenant()
    assert (contract.short, contract.namespace) == ("foo", "tenant-foo")
    assert (contract.team_account, contract.user_account) == ("ml-team-foo", "ml-team-foo")
    assert (contract.normal_qos_name, contract.interactive_qos_name) == ("normal-foo", "interactive-foo")
    assert contract.reservation_name == "tenant-foo-reservation"
    assert contract.usernames == ["alice", "bob", "carol"]
    assert contract.capacity.node_count == 8
    assert contract.storage.requested_bytes == 5 * 10**12 + 50 * 10**12


def test_team_account_defaults_from_the_slug() -> None:
    assert tenant(slurm__team_account=None).team_account == "ml-team-foo"
    assert tenant(slurm__team_account="ml-research").user_account == "ml-research"


def test_login_hostname_defaults_from_the_slug() -> None:
    assert tenant(login__hostname=None).login_hostname == "login.tenant-foo.example.internal"


def test_budget_is_split_evenly_across_users_rounding_down() -> None:
    assert tenant(slurm__budget_gpu_minutes_total=1000).user_budget_gpu_minutes == 333


def errors_of(**changes: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as error:
        TenantContract.model_validate(tenant_data(**changes))
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in error.value.errors()]


BAD_INPUTS = [
    ({"capacity__nodes": ["gpu-01"]}, "capacity", "nodes lists 1 names but gpus=64 needs 8 h100-8x nodes"),
    ({"network__isolation": "pkey"}, "network", "isolation=pkey needs pkey"),
    (
        {"storage__home_per_user": {"hard": "90GB", "soft": "100GB"}},
        "storage.home_per_user",
        "soft quota 100GB is above hard quota 90GB",
    ),
    ({"storage__pvc_size": "10Xi"}, "storage.pvc_size", "unknown size unit 'Xi'"),
    ({"slurm__partition_max_time": "one day"}, "slurm.partition_max_time", "String should match pattern"),
    (
        {"slurm__interactive_qos": {"priority": 1, "grp_gpus": 72, "max_wall": "01:00:00"}},
        "",
        "slurm.interactive_qos.grp_gpus=72 exceeds capacity.gpus=64",
    ),
    ({"slurm__budget_gpu_minutes_total": 2}, "", "budget_gpu_minutes_total is smaller than the number of users"),
    ({"capacity__gpus": 10, "capacity__sku": "l40s-4x"}, "capacity", "ask for 8 or 12"),
    ({"display_name": "Acme, Inc."}, "display_name", "contains ',', which sacctmgr cannot store"),
    ({"display_name": "O'Brien Labs"}, "display_name", "write it without them, e.g. 'O Brien Labs'"),
    ({"display_name": "Acme=Labs"}, "display_name", "contains '='"),
    ({"display_name": "Acme\u2028Labs"}, "display_name", "contains U+2028 (LINE SEPARATOR), which is not printable"),
    ({"display_name": "Acme\u0085Labs"}, "display_name", "contains U+0085"),
    ({"display_name": "Acme\u202eLabs"}, "display_name", "contains U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    (
        {"capacity__nodes": ["gpu-01,gpu-02", *(f"gpu-{i:02d}" for i in range(3, 10))]},
        "capacity.nodes.0",
        "String should match pattern",
    ),
    ({"login__hostname": "login..example.internal"}, "login.hostname", "is not a DNS name"),
    ({"login__hostname": f"{'a' * 64}.example.internal"}, "login.hostname", "is not a DNS name"),
]


def test_a_display_name_sacctmgr_can_store_is_kept() -> None:
    assert tenant(display_name="Acme Inc. (EU) - Research").display_name == "Acme Inc. (EU) - Research"


def test_adopt_existing_defaults_to_false() -> None:
    assert not any(user.adopt_existing for user in tenant().users)


@pytest.mark.parametrize(("changes", "field", "message"), BAD_INPUTS)
def test_bad_input_names_the_field(changes: dict[str, Any], field: str, message: str) -> None:
    assert any(loc == field and message in msg for loc, msg in errors_of(**changes)), errors_of(**changes)


def test_gpus_must_fill_whole_nodes_of_the_sku() -> None:
    assert tenant(capacity__gpus=12, capacity__sku="l40s-4x").capacity.node_count == 3


def test_a_user_problem_names_the_user_by_index() -> None:
    users = tenant_data()["users"]
    users[2]["email"] = "carol at tenant-foo"
    assert [loc for loc, _ in errors_of(users=users)] == ["users.2.email"]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\u200b"])
def test_a_person_name_with_a_line_separator_or_format_character_is_refused(separator: str) -> None:
    users = tenant_data()["users"]
    users[1]["name"] = f"Bob{separator}Builder"
    errors = errors_of(users=users)
    assert [loc for loc, _ in errors] == ["users.1.name"], errors
    assert f"U+{ord(separator):04X}" in errors[0][1] and "write the name without it" in errors[0][1], errors


def test_names_in_any_script_are_kept() -> None:
    users = tenant_data()["users"]
    users[0]["name"] = "Zoë Ñúñez-Ōtsuka 王小明"
    assert tenant(users=users, display_name="Société Générale AI Lab").users[0].name == "Zoë Ñúñez-Ōtsuka 王小明"


def test_a_username_given_twice_is_refused() -> None:
    users = tenant_data()["users"]
    users[2]["username"] = "alice"
    assert errors_of(users=users) == [
        ("users", "Value error, users[2].username 'alice' appears twice; usernames must be unique")
    ]


def _policy(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow"},
        "spec": {"podSelector": {}, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "where", "message"),
    [
        ({"podSelector": {"matchLabels": {"app": "login pod"}}}, "matchLabels", "not a Kubernetes label value"),
        ({"podSelector": {"matchLabels": {"-app": "login"}}}, "matchLabels", "not a Kubernetes label key"),
        ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}, "cidr", "not a CIDR"),
        ({"egress": [{"ports": [{"port": 70000}]}]}, "port", "less than or equal to 65535"),
        ({"policyTypes": ["Sideways"]}, "policyTypes", "Input should be 'Ingress' or 'Egress'"),
    ],
)
def test_a_contract_network_policy_is_checked_as_the_apiserver_would(
    spec: dict[str, Any], where: str, message: str
) -> None:
    found = errors_of(network__policies=[_policy(spec)])
    assert any(loc.startswith("network.policies.0.spec") and where in loc and message in msg for loc, msg in found), (
        found
    )


def test_a_valid_contract_network_policy_is_kept() -> None:
    contract = tenant(network__policies=[_policy({"egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]})])
    assert contract.network.policies is not None and contract.network.policies[0].spec.types() == {"Ingress", "Egress"}


def test_an_empty_team_account_skips_the_sub_account_as_documented() -> None:
    """Found by tests/generated: the field says "empty string skips", yet its pattern refused the empty string."""
    contract = tenant(slurm__team_account="")
    assert contract.team_account is None and contract.user_account == "tenant-foo"


def test_a_node_named_twice_is_refused() -> None:
    """Found by tests/generated: ``nodes: [gpu-01, gpu-01]`` for 16 GPUs passed, then reserved one node (the
    Reservation and the partition's hostlist drop the repeat) while the quota and the plan counted two."""
    errors = errors_of(capacity__gpus=16, capacity__nodes=["gpu-01", "gpu-01"], slurm__interactive_qos__grp_gpus=8)
    assert errors == [
        (
            "capacity",
            "Value error, nodes lists gpu-01 more than once; a node is reserved once, so name 2 different nodes",
        )
    ]


SLURM_TIMES_REFUSED = [
    (
        {"slurm__partition_default_time": "24:00:01"},
        "partition_default_time=24:00:01 is longer than partition_max_time=24:00:00; slurmctld would drop it",
    ),
    ({"slurm__partition_default_time": "UNLIMITED"}, "partition_default_time=UNLIMITED is longer than"),
    (
        {"slurm__contract_wall_limit": "48:00:00", "slurm__normal_qos__max_wall": "UNLIMITED"},
        "contract_wall_limit=48:00:00 is longer than partition_max_time",
    ),
    (
        {"slurm__contract_wall_limit": "UNLIMITED", "slurm__partition_max_time": "UNLIMITED"},
        "contract_wall_limit=UNLIMITED is longer than normal_qos.max_wall",
    ),
]


@pytest.mark.parametrize(("changes", "message"), SLURM_TIMES_REFUSED)
def test_slurm_times_that_slurm_or_the_validate_step_would_refuse_are_refused_up_front(
    changes: dict[str, Any], message: str
) -> None:
    """Found by tests/generated: slurmctld drops a DefaultTime above MaxTime, and the validate step's
    slurm.max_time fails (after every write) a wall limit longer than MaxTime or the normal QoS's MaxWall."""
    assert any(loc == "slurm" and message in msg for loc, msg in errors_of(**changes)), errors_of(**changes)


def test_unlimited_times_that_fit_are_kept() -> None:
    contract = tenant(
        slurm__contract_wall_limit="UNLIMITED",
        slurm__partition_max_time="UNLIMITED",
        slurm__partition_default_time="UNLIMITED",
        slurm__normal_qos__max_wall="UNLIMITED",
    )
    assert contract.slurm.partition_default_time == "UNLIMITED"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"kube_quota__default_request_cpu": "2", "kube_quota__default_cpu": "1500m"},
            "kube_quota",
            "default_request_cpu=2 is above default_cpu=1500m; Kubernetes refuses a LimitRange",
        ),
        (
            {"kube_quota__default_request_memory": "17Gi"},
            "kube_quota",
            "default_request_memory=17Gi is above default_memory=16Gi",
        ),
        (
            {"storage__pvc_size": "101Ti"},
            "",
            "storage.pvc_size=101Ti is above kube_quota.requests_storage=100Ti; the ResourceQuota would refuse",
        ),
        ({"kube_quota__persistentvolumeclaims": 0}, "kube_quota.persistentvolumeclaims", "greater than or equal to 1"),
        ({"slurm__cluster": "-prod"}, "slurm.cluster", "String should match pattern"),
        ({"slurm__cluster": "_prod"}, "slurm.cluster", "String should match pattern"),
    ],
)
def test_quotas_the_apiserver_or_the_tenant_pvc_would_trip_on_are_refused(
    changes: dict[str, Any], field: str, message: str
) -> None:
    """Found by tests/generated: each of these passed validation and failed after approval (the LimitRange is
    refused by the apiserver, the tenant PVC by the ResourceQuota, a Slurm cluster name starting with '-' or '_'
    by the sacctmgr argument check)."""
    assert any(loc == field and message in msg for loc, msg in errors_of(**changes)), errors_of(**changes)


def test_authorized_keys_above_a_secrets_limit_are_refused() -> None:
    """Found by tests/generated: 500 users with 16 RSA keys each need about 3 MB in the authorized-keys Secret,
    which the apiserver refuses above 1 MiB."""
    rsa = (
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCedwHTVsbozpIzb2OfUBJnyDmh+FqGxFGOZQMUm8F/IqsAXjsy5ccKM+obQGrMnu7bc3+B7"
        "j06sGm+ClT1kSmJ1Q1RoI+2VHXIFvn6UcceAA3akMVPMt9oWj+pf3YxPUJj2v443byZ3f7mRAlajQQc9t9YYbdfjxZdXvLE7rx3/bJqF6T0o94U"
        "jxMyd+6T3VuKHuclYvvNZaFKSXUU55xtNZ91Fjwe1XDgYJXYx7NqOh9jwMnAM+KqScX8CEI5ng4LZYeoxHzPsECGt+pzyQjO4be37da55WHdHXL"
        "nDQofsEmGJ6xNXlzMcb69LtOf3pncis8H4ia7QWX2pdAik3V7"
    )
    users = [
        {"username": f"u{i}", "email": f"u{i}@example.org", "name": f"User {i}", "ssh_keys": [rsa] * 16}
        for i in range(500)
    ]
    errors = errors_of(users=users)
    assert errors == [
        (
            "",
            "Value error, users[].ssh_keys add up to 3048000 bytes, above the 1 MiB Kubernetes allows in the "
            "authorized-keys Secret: give each user fewer keys, or shorter ones (ssh-ed25519)",
        )
    ]
