"""A contract broken in one field is refused before any write, and the refusal names that field.

Each breaker takes a drawn valid contract and breaks one field (the path it names) with a value the contract's
documentation, or the system the value is written to, refuses. The refusal is what ``tenantflow validate`` and
the HTTP API print (:func:`starter.contracts.parse_contract`): one line per problem, ``<field>: <message>``.
A line names the field when it is the field itself, or when it is a parent (a check across fields reports at
the parent, or at the top level) and its message names the rest of the path.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import ContractError, parse_contract
from tests.generated.profile import EXAMPLES, GENERATED
from tests.generated.strategies import PUBLIC_KEYS, Drawn, contracts

Data = dict[str, Any]
Edits = list[tuple[str, Any]]
Breaker = Callable[[Drawn, st.DataObject], tuple[str, Edits]]
"""A way to break a drawn contract: the field it breaks, and the edits (path, value) that break it."""
LINE = re.compile(r"^\s+- (?P<loc>\S+): (?P<message>.*)$")


def put(data: Data, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value


def field(path: str, *values: Any) -> Breaker:
    """Set ``path`` to one of ``values``."""
    return lambda drawn, data: (path, [(path, data.draw(st.sampled_from(values)))])


def gpus_off_by_one(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "capacity.gpus", [("capacity.gpus", drawn.data["capacity"]["gpus"] + 1)]


def grp_gpus_above_capacity(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    path = "slurm.interactive_qos.grp_gpus"
    return path, [(path, drawn.data["capacity"]["gpus"] + 1)]


def too_many_users(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    user = drawn.data["users"][0]
    return "users", [("users", [{**user, "username": f"u{i}"} for i in range(501)])]


def username_twice(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    users = drawn.data["users"][:499]
    return f"users.{len(users)}.username", [("users", [*users, copy.deepcopy(users[0])])]


def soft_above_hard(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "storage.home_per_user.soft", [("storage.home_per_user", {"hard": "1Ki", "soft": "2Ki"})]


def node_names(drawn: Drawn, first: str, count: int) -> list[str]:
    return [first, *(f"gpu-{i}" for i in range(1, count))]


def wrong_node_count(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "capacity.nodes", [("capacity.nodes", node_names(drawn, "gpu-0", drawn.node_count + 1))]


def duplicate_nodes(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    count = max(drawn.node_count, 2)
    nodes = node_names(drawn, "gpu-1", count)
    gpus = count * drawn.gpus_per_node
    return "capacity.nodes", [("capacity.gpus", gpus), ("capacity.nodes", nodes), ("slurm.normal_qos.grp_gpus", 1)]


def bad_node_name(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    first = data.draw(st.sampled_from(["GPU_1", "-gpu", "a" * 64, "gpu-1,gpu-2"]))
    return "capacity.nodes.0", [("capacity.nodes", node_names(drawn, first, drawn.node_count))]


def budget_below_users(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    path = "slurm.budget_gpu_minutes_total"
    return path, [(path, len(drawn.data["users"]) - 1 or 0)]


def pkey_missing(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "network.pkey", [("network", {"isolation": "pkey"})]


def keys_above_a_secret(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    """500 users with 16 RSA keys each: about 3 MB of authorized keys, over Kubernetes' 1 MiB Secret limit."""
    user = drawn.data["users"][0]
    many = [{**user, "username": f"u{i}", "ssh_keys": [PUBLIC_KEYS[-1]] * 16} for i in range(500)]
    return "users[].ssh_keys", [("users", many), ("slurm.budget_gpu_minutes_total", 500)]


def request_above_limit(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    resource = data.draw(st.sampled_from(["cpu", "memory"]))
    request, limit = ("2", "1500m") if resource == "cpu" else ("2Gi", "1Gi")
    path = f"kube_quota.default_request_{resource}"
    return path, [(path, request), (f"kube_quota.default_{resource}", limit)]


def pvc_above_quota(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "storage.pvc_size", [("storage.pvc_size", "2Ti"), ("kube_quota.requests_storage", "1Ti")]


def default_time_above_max(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    path = "slurm.partition_default_time"
    edits = [(path, data.draw(st.sampled_from(["24:00:01", "2-00:00:00", "UNLIMITED"])))]
    return path, [*edits, ("slurm.partition_max_time", "24:00:00"), ("slurm.contract_wall_limit", "01:00:00")]


def wall_limit_above(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    """The validate step's ``slurm.max_time`` refuses a partition MaxTime or normal QoS MaxWall below the wall
    limit the tenant bought, after everything was written."""
    shorter = data.draw(st.sampled_from(["slurm.partition_max_time", "slurm.normal_qos.max_wall"]))
    path = "slurm.contract_wall_limit"
    wall = data.draw(st.sampled_from(["48:00:00", "UNLIMITED"]))
    edits = [(path, wall), ("slurm.partition_max_time", "UNLIMITED"), ("slurm.normal_qos.max_wall", "UNLIMITED")]
    return path, [*edits, (shorter, "24:00:00"), ("slurm.partition_default_time", "01:00:00")]


def unknown_field(drawn: Drawn, data: st.DataObject) -> tuple[str, Edits]:
    return "capacity.gpu_count", [("capacity.gpu_count", 64)]


BREAKERS: list[Breaker] = [
    field("slug", "Tenant-foo", "foo", "tenant-", "tenant-foo-", "tenant_foo", "tenant-" + "a" * 25),
    field("display_name", "", "   ", "x" * 101, "Acme, Inc.", "O'Brien", "Acme\u2028Labs", "Acme\x07", "a=b"),
    field("cluster.context", "", "-ctx", "a b"),
    field("capacity.sku", "h900-8x", "H100-8X", ""),
    field("capacity.gpus", 0, -8, 100_008, "sixty-four"),
    gpus_off_by_one,
    wrong_node_count,
    duplicate_nodes,
    bad_node_name,
    field("capacity.term_days", 0, 3651),
    field("capacity.hardware_pool", "-pool", "Pool", ""),
    field("capacity.partition_type", "preemptible"),
    field("users", []),
    too_many_users,
    username_twice,
    field("users.0.username", "1abc", "Alice", "a" * 33, "", "a_b"),
    field("users.0.email", "alice", "a@b", "a b@example.com"),
    field("users.0.name", "", "x;y", "x" * 151, "Bob\u200bX", "a<b"),
    field("users.0.ssh_keys", [], [PUBLIC_KEYS[0]] * 17, ["ssh-ed25519 AAAA"], ["ssh-dss AAAAB3NzaC1kc3M"]),
    field("users.0.ssh_keys.0", PUBLIC_KEYS[0] + "\nssh-rsa AAAA", PUBLIC_KEYS[0] + " a;b"),
    field("storage.isolation", "none"),
    soft_above_hard,
    field("storage.scratch.hard", "lots", "0", "100m", "17EiB", "-1Gi", "5 XB"),
    field("storage.home_filesystem_capacity", "", "1.5"),
    field("storage.pvc_name", "Bad_Name", "-x"),
    field("storage.pvc_size", "0", "10Xi"),
    field("kube_quota.requests_cpu", "1.5", "-1", "1k"),
    field("kube_quota.requests_memory", "1GB", "1.5Gi"),
    field("kube_quota.persistentvolumeclaims", -1, 10_001),
    field("kube_quota.default_memory", "1Pi"),
    field("slurm.cluster", "Prod", "a" * 41, ""),
    field("slurm.fairshare", 0, 1_000_001),
    field("slurm.grp_jobs", 0),
    field("slurm.user_max_jobs", 0, 100_001),
    budget_below_users,
    field("slurm.normal_qos.priority", -1, 1_000_001),
    field("slurm.normal_qos.grp_gpus", 0),
    grp_gpus_above_capacity,
    field("slurm.normal_qos.max_wall", "1 day", "24h", ""),
    field("slurm.partition_max_time", "forever"),
    field("slurm.team_account", "-x", "Team", "a" * 41),
    field("slurm.oversubscribe", "YES"),
    field("network.isolation", "vlan"),
    field("network.pkey", "8001", "0x12345"),
    pkey_missing,
    field("login.replicas", 0, 11),
    field("login.hostname", "a..b", "-a.b", "a" * 64 + ".b"),
    field("login.chart_version", "v1", "1.4-x"),
    unknown_field,
    keys_above_a_secret,
    request_above_limit,
    pvc_above_quota,
    field("kube_quota.persistentvolumeclaims", 0),
    default_time_above_max,
    wall_limit_above,
    field("slurm.cluster", "_prod", "-prod"),
]


def names(path: str, refusal: str) -> bool:
    """Whether ``refusal`` names ``path``: a line for the field, or for a parent whose message names the rest."""
    if path in refusal:
        return True
    for line in refusal.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        loc = match["loc"]
        rest = path if loc == "(top level)" else path.removeprefix(loc + ".") if path.startswith(loc + ".") else None
        if loc == path or (rest is not None and rest.split(".")[-1] in match["message"]):
            return True
    return False


def refusal_of(data: Data) -> str:
    with pytest.raises(ContractError) as refused:
        parse_contract(TenantContract, data, "contract.yaml")
    return str(refused.value)


@settings(GENERATED, max_examples=max(EXAMPLES // 6, 5))
@given(contracts(), st.data())
def test_every_broken_field_is_refused_naming_the_field(drawn: Drawn, data: st.DataObject) -> None:
    for breaker in BREAKERS:
        broken = copy.deepcopy(drawn.data)
        path, edits = breaker(drawn, data)
        for at, value in edits:
            put(broken, at, value)
        refusal = refusal_of(broken)
        assert names(path, refusal), f"{edits}: {refusal}"


@GENERATED
@given(contracts())
def test_a_kubeconfig_in_any_contract_is_refused_naming_the_field(drawn: Drawn) -> None:
    broken = copy.deepcopy(drawn.data)
    broken["cluster"]["kubeconfig"] = "/tmp/kubeconfig"
    assert names("cluster.kubeconfig", refusal_of(broken))
