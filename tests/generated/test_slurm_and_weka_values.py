"""The Slurm objects, the partition line and the Weka quotas of a drawn contract carry the contract's values.

Expected values are written here from the contract's fields and the runbook (docs/runbooks.md steps 4 and 6:
the tenant account with ``Organization=<slug>`` and ``GrpTRES=gres/gpu=<gpus>``, the team sub-account, two
QoS, one association per user with an even share of the GPU-minute budget, the partition of the tenant's nodes;
``/home/<user>`` and ``/scratch/<slug>`` quotas on the tenant's own filesystems or the shared ones). Node lists
are read back with python-hostlist, the library Slurm's hostlist syntax is checked against in
tests/unit/models/test_hostlist.py.
"""

from __future__ import annotations

import hostlist
from hypothesis import given
from hypothesis import strategies as st

from tenantflow.activities.common import manifests
from tenantflow.activities.common.slurm_cli import text, word
from tenantflow.activities.slurm import wants
from tenantflow.activities.storage import csi, layout
from tenantflow.models.hostlist import compress_hostlist, expand_hostlist
from tests.generated.profile import GENERATED
from tests.generated.strategies import LOWER, Drawn, contract_of, contracts, names


def qos_values(drawn: Drawn, which: str) -> dict[str, str]:
    data, slug = drawn.data, drawn.data["slug"]
    q = data["slurm"][which]
    values = {
        "Description": f"tenantflow:{slug}",
        "Priority": str(q["priority"]),
        "GrpTRES": f"gres/gpu={q.get('grp_gpus', data['capacity']['gpus'])}",
        "MaxWall": q["max_wall"],
        "Flags": "DenyOnLimit" if q["deny_on_limit"] else "",
    }
    return {**values, "PreemptMode": "OFF"} if q["preempt_off"] else values


@GENERATED
@given(contracts())
def test_slurm_accounts_qos_and_users_carry_the_contracts_values(drawn: Drawn) -> None:
    contract, data = contract_of(drawn), drawn.data
    slug, short, slurm = data["slug"], data["slug"].removeprefix("tenant-"), data["slurm"]
    team = slurm.get("team_account")
    team = None if team == "" else team or f"ml-team-{short}"
    where = {"Cluster": slurm["cluster"]}
    accounts = [(w.kind, w.name, w.values, w.where) for w in wants.want_accounts(contract)]
    tenant_account = {
        "Description": data["display_name"].strip(),
        "Organization": slug,
        "Parent": "root",
        "Fairshare": str(slurm["fairshare"]),
        "GrpTRES": f"gres/gpu={data['capacity']['gpus']}",
        "GrpJobs": str(slurm["grp_jobs"]),
    }
    team_account = {
        "Description": f"{data['display_name'].strip()} ML Team",
        "Organization": slug,
        "Parent": slug,
        "Fairshare": str(slurm["team_fairshare"]),
    }
    assert accounts == [("account", slug, tenant_account, where)] + (
        [("account", team, team_account, where)] if team else []
    )
    normal, interactive = f"normal-{short}", f"interactive-{short}"
    assert [(w.name, w.values) for w in wants.want_qos(contract)] == [
        (normal, qos_values(drawn, "normal_qos")),
        (interactive, qos_values(drawn, "interactive_qos")),
    ]
    both = ",".join(sorted((normal, interactive)))
    account = team or slug
    share = slurm["budget_gpu_minutes_total"] // len(data["users"])
    user_values = {
        "Account": account,
        "DefaultAccount": account,
        "Fairshare": "parent",
        "MaxJobs": str(slurm["user_max_jobs"]),
        "GrpTRESMins": f"gres/gpu={share}",
        "QOS": both,
        "DefaultQOS": normal,
    }
    assert [(w.name, w.values, w.where) for w in wants.want_users(contract)] == [
        (user["username"], user_values, {**where, "Account": account}) for user in data["users"]
    ]
    assert share * len(data["users"]) <= slurm["budget_gpu_minutes_total"]
    every = [*wants.want_accounts(contract), *wants.want_qos(contract), wants.want_account_qos(contract)]
    for want in [*every, *wants.want_users(contract)]:
        assert [word(want.name), *map(word, want.where.values())] == [want.name, *want.where.values()]
        assert text(want.values.get("Description", "-")) == want.values.get("Description", "-")


@GENERATED
@given(contracts())
def test_the_partition_line_names_the_tenants_nodes_accounts_and_times(drawn: Drawn) -> None:
    contract, data = contract_of(drawn), drawn.data
    nodes = list(contract.capacity.nodes or [f"gpu-{i:05d}" for i in range(1, drawn.node_count + 1)])
    fields = dict(token.split("=", 1) for token in wants.partition_line(contract, nodes[::-1]).split())
    team = data["slurm"].get("team_account")
    team = None if team == "" else team or f"ml-team-{data['slug'].removeprefix('tenant-')}"
    assert sorted(hostlist.expand_hostlist(fields.pop("Nodes"))) == sorted(nodes)
    assert fields == {
        "PartitionName": data["slug"],
        "AllowAccounts": ",".join([data["slug"], *([team] if team else [])]),
        "Default": "NO",
        "State": "UP",
        "MaxTime": data["slurm"]["partition_max_time"],
        "DefaultTime": data["slurm"]["partition_default_time"],
        "PreemptMode": "OFF",
        "OverSubscribe": data["slurm"]["oversubscribe"],
    }


@GENERATED
@given(contracts())
def test_weka_filesystems_quotas_and_mounts_follow_the_storage_mode(drawn: Drawn) -> None:
    contract, data = contract_of(drawn), drawn.data
    slug, strict = data["slug"], data["storage"]["isolation"] == "strict-org"
    home, scratch = (f"{slug}-home", f"{slug}-scratch") if strict else ("home", "scratch")
    assert layout.filesystem_names(contract) == {"home": home, "scratch": scratch}
    assert layout.filesystem_capacities(contract) == {
        "home": drawn.bytes["storage.home_filesystem_capacity"],
        "scratch": drawn.bytes["storage.scratch.hard"],
    }
    quotas = [(q.role, q.filesystem, q.path, q.label, q.hard, q.soft) for q in layout.quota_targets(contract)]
    home_hard, home_soft = drawn.bytes["storage.home_per_user.hard"], drawn.bytes["storage.home_per_user.soft"]
    assert quotas == [
        *(("home", home, f"/{u['username']}", f"/home/{u['username']}", home_hard, home_soft) for u in data["users"]),
        (
            "scratch",
            scratch,
            f"/{slug}",
            f"/scratch/{slug}",
            *(drawn.bytes[f"storage.scratch.{k}"] for k in ("hard", "soft")),
        ),
    ]
    mounts = manifests.login_release(
        contract,
        ldap_uri="",
        ldap_base_dn="",
        ldap_bind_dn="",
        bind_password_secret="s",
        slurm_controller_host="",
        chart_source=("flux-system", "sunk"),
    )["spec"]["values"]
    expected = (f"{slug}-home", f"{slug}-scratch") if strict else (f"home/{slug}", f"scratch/{slug}")
    assert (mounts["homeMount"]["filesystem"], mounts["scratchMount"]["filesystem"]) == expected
    assert csi.storage_class_parameters(contract)["filesystemName"] == scratch


NODE_NAMES = names(LOWER, LOWER + "0123456789.-", LOWER + "0123456789", 20)


@GENERATED
@given(st.lists(st.tuples(NODE_NAMES, st.integers(0, 10_000), st.integers(1, 5)), min_size=1, max_size=40))
def test_a_compressed_hostlist_expands_to_the_same_nodes(parts: list[tuple[str, int, int]]) -> None:
    nodes = [f"{stem}{number:0{width}d}" if stem[-1].isalpha() else f"{stem}-{number}" for stem, number, width in parts]
    compressed = compress_hostlist(nodes)
    assert sorted(hostlist.expand_hostlist(compressed)) == sorted(set(nodes))
    assert sorted(expand_hostlist(compressed)) == sorted(set(nodes))
