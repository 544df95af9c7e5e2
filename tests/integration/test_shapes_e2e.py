"""Tenants of the contract's edge shapes onboarded and offboarded through the lab (issue 28, "one shape").

Every other lab onboarding uses the example's shape (8 nodes, 3 users, strict isolation). Here:

* the smallest tenant: one ``h100-8x`` node (8 GPUs) and one user; its 2-node all-reduce cannot run and the
  handover must say how that was handled;
* the longest names the contract allows (a 31-character slug, 32-character usernames, the longest display name
  and email) in the shared-org storage mode, onboarded at the same time as a second shared-org tenant, then
  offboarded with ``--purge-data`` while the other stays;
* the most users the contract allows.

Each contract is written out below and every expected value is read off it (or the runbook), never computed by
the product's functions. Each tenant is offboarded with its data purged, and the lab is compared with what it was
before: only the deactivated user records the runbook keeps may remain.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import ValidationError
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.tenant import TenantContract
from tests.chaos.racing import free_nodes
from tests.integration.runs import offboard, onboard
from tests.integration.world import World, diff, world_snapshot
from tests.labfixture import lab_worker

CLUSTER = {"context": "tenant-cluster"}


def ssh_key(username: str) -> str:
    """A real ed25519 public key per user (seeded by the name, so a failure replays with the same keys)."""
    private = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(username.encode()).digest())
    public = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    return f"{public} {username}@shapes"


def user(username: str, name: str, email: str) -> dict[str, Any]:
    return {"username": username, "name": name, "email": email, "ssh_keys": [ssh_key(username)]}


def tenant(
    slug: str, display_name: str, gpus: int, users: list[dict[str, Any]], isolation: str = "strict-org"
) -> dict[str, Any]:
    """A contract as written in a YAML file: ``gpus`` of ``h100-8x`` nodes, every other field at its default."""
    return {
        "slug": slug,
        "display_name": display_name,
        "cluster": CLUSTER,
        "capacity": {"sku": "h100-8x", "gpus": gpus},
        "users": users,
        "storage": {"isolation": isolation},
    }


def sh(lab: LabEndpoints, *argv: str) -> str:
    done = subprocess.run(
        list(argv), env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def kubectl(lab: LabEndpoints, *argv: str) -> str:
    return sh(lab, "kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", CLUSTER["context"], *argv)


def sacctmgr(lab: LabEndpoints, entity: str, where: str, fmt: str) -> list[str]:
    """``sacctmgr -P -n show`` rows, sorted."""
    return sorted(sh(lab, "sacctmgr", "-P", "-n", "show", entity, where, f"format={fmt}").splitlines())


def groups_of(lab: LabEndpoints, uid: str) -> list[str]:
    """The ``memberOf`` values of ``uid`` through the LDAP outpost (``ldapsearch``, lines unwrapped)."""
    command, *rest = lab.ldapsearch(f"(uid={uid})", "memberOf")
    out = sh(lab, command, "-o", "ldif-wrap=no", *rest)
    return [line.removeprefix("memberOf: ") for line in out.splitlines() if line.startswith("memberOf: ")]


def reserved_nodes(lab: LabEndpoints, slug: str) -> list[str]:
    """The nodes labelled for the tenant, as ``kubectl get nodes -l reserved.tenant=<slug>`` lists them."""
    return sorted(
        n.removeprefix("node/")
        for n in kubectl(lab, "get", "nodes", "-l", f"reserved.tenant={slug}", "-o", "name").split()
    )


def assert_only_user_records_left(before: World, lab: LabEndpoints, usernames: list[str]) -> None:
    """After offboarding with purge, the lab is as it was but for the deactivated users the runbook keeps."""
    residue = diff(before, world_snapshot(lab))
    assert all(line.startswith("+ ") for line in residue), "\n".join(residue)
    assert all(any(name in line for name in usernames) for line in residue), "\n".join(residue)


@asynccontextmanager
async def onboarded(
    env: WorkflowEnvironment, lab: LabEndpoints, contract: TenantContract
) -> AsyncIterator[OnboardingResult]:
    """The tenant onboarded through a real worker (its completed result); then offboarded with its data purged,
    leaving the lab as it was but for the deactivated users."""
    before = world_snapshot(lab)
    async with lab_worker(env.client, lab) as api:
        result = await onboard(api, contract)
        try:
            assert result.status == "completed", result.message
            yield result
        finally:
            purged = await offboard(api, contract, purge=True)
    assert purged.status == "completed"
    assert_only_user_records_left(before, lab, contract.usernames)


# -- (a) one node, one user -----------------------------------------------------------------------------------

SOLO = tenant("tenant-solo", "Solo Research", 8, [user("sol", "Sol Single", "sol@tenant-solo.example")])
SOLO_NODES = 1
"""8 GPUs of ``h100-8x`` nodes, 8 GPUs each (the runbook's SKU table): one node."""


def check_one_node_handover(result: OnboardingResult, node: str) -> None:
    """The all-reduce ran on the one node, and the sheet says the 2-node test was skipped and why."""
    assert result.handover is not None
    findings = {f.check: f for f in result.findings if f.check.startswith("smoke.")}
    assert all(f.ok for f in findings.values()), findings
    assert set(findings) == {"smoke.single_node", "smoke.nccl", "smoke.nccl.two_node", "smoke.storage"}
    assert findings["smoke.nccl.two_node"].message.startswith("2-node all-reduce skipped: tenant-solo has 1 node")
    evidence = {e["check"]: e for e in result.handover.sheet["smoke"]}  # type: ignore[attr-defined]
    assert evidence["smoke.nccl"]["nodes"] == [node]
    assert evidence["smoke.nccl"]["ran"].startswith("single-node NCCL all-reduce, 8 ranks")
    assert float(evidence["smoke.nccl"]["figures"]["busbw_gbps_at_4gb"]) > 0
    assert evidence["smoke.nccl.two_node"]["state"] == "SKIPPED"
    assert "needs 2 of the tenant's nodes" in evidence["smoke.nccl.two_node"]["note"]
    assert evidence["smoke.single_node"]["nodes"] == evidence["smoke.storage"]["nodes"] == [node]
    assert evidence["smoke.single_node"]["figures"]["gpus_seen_by_1_gpu_step"] == "1"
    assert "## Smoke tests" in result.handover.markdown
    assert "- smoke.nccl.two_node: SKIPPED: tenant-solo has 1 node (8 GPUs)" in result.handover.markdown


async def test_a_one_node_one_user_tenant_onboards_and_offboards(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    async with onboarded(dev_env, lab, TenantContract.model_validate(SOLO)) as result:
        nodes = reserved_nodes(lab, "tenant-solo")
        assert len(nodes) == SOLO_NODES
        check_one_node_handover(result, nodes[0])
        assert sacctmgr(lab, "assoc", "account=tenant-solo", "account,user,grptres") == ["tenant-solo||gres/gpu=8"]
        assert sacctmgr(lab, "assoc", "account=ml-team-solo", "user") == ["", "sol"]
        partition = sh(lab, "scontrol", "-o", "show", "partition", "tenant-solo")
        assert f" Nodes={nodes[0]} " in partition, partition
        assert groups_of(lab, "sol") == ["cn=tenant-solo,ou=groups,dc=auth,dc=example,dc=internal"]


# -- (b) the longest names, shared-org storage, beside another tenant -------------------------------------------

LONG_SLUG = "tenant-0long--slug-shared-org-9"
"""``tenant-`` and 24 characters, the most SLUG_PATTERN allows (first and last a letter or digit, ``--`` inside)."""
LONG_SHORT = "0long--slug-shared-org-9"
LONG_USERS = ("thirty-two-character-username-x-", "z--0123456789abcdefghijklmnopqrs", "q")
"""32 characters (the most USERNAME_PATTERN allows), one ending in ``-``, one with ``--``; and the shortest, 1."""
LONG_DISPLAY = "Ångström Über-Long Research Collective № 9 (Zürich / Kraków) — a tenant display name of 100 chars!!!"
LONG_NAME = (
    "O'Brien-Ñúñez, Zoë Łukasiewicz (ゾーイ), PhD — a researcher whose full name runs right up to the contract's "
    "limit of one hundred and fifty characters...."
)
"""A comma and a quote (allowed in a person's name, not in the display name), non-Latin letters, 150 characters."""
LONG_EMAIL = f"{'e' * 56}+shapes9@{'d' * 63}.{'o' * 63}.{'m' * 44}.example.internal"
"""254 characters, the most the contract allows: a 64-character local part and DNS labels of at most 63."""
LONG = tenant(
    LONG_SLUG,
    LONG_DISPLAY,
    16,
    [
        user(LONG_USERS[0], LONG_NAME, LONG_EMAIL),
        user(LONG_USERS[1], "Zed Double-Dash", "zed@long.example"),
        user(LONG_USERS[2], "Q", "q@long.example"),
    ],
    "shared-org",
)
NEIGHBOUR = tenant("tenant-nbr", "Neighbour", 8, [user("nia", "Nia Next-Door", "nia@tenant-nbr.example")], "shared-org")
SHARED_HOME, SHARED_SCRATCH = "home", "scratch"
"""The platform's shared Weka filesystems (runbook 6b): /home/<user> is /<user> on one, /scratch/<slug> /<slug>."""


def test_the_long_names_are_the_longest_the_contract_allows() -> None:
    """The limits as the contract documents them (slug max 32 with the ``tenant-`` prefix and an alphanumeric last
    character, usernames 32, display name 100, a person's name 150, email 254)."""
    assert (len(LONG_SLUG), [len(u) for u in LONG_USERS]) == (31, [32, 32, 1])
    assert (len(LONG_DISPLAY), len(LONG_NAME), len(LONG_EMAIL)) == (100, 150, 254)
    assert f"tenant-{LONG_SHORT}" == LONG_SLUG
    TenantContract.model_validate(LONG)
    for longer in ({"slug": f"{LONG_SLUG}0"}, {"users": [user(f"{LONG_USERS[0]}0", "Too Long", "t@l.example")]}):
        with pytest.raises(ValidationError):
            TenantContract.model_validate({**LONG, **longer})


def weka_paths(lab: LabEndpoints) -> dict[str, tuple[set[str], set[str]]]:
    """Each shared filesystem's directories and the paths that carry a quota, from the Weka stand-in's state."""
    filesystems = world_snapshot(lab)["weka"]["filesystems"]
    return {
        name: (set(filesystems[name]["directories"]), {q["path"] for q in filesystems[name]["quotas"]})
        for name in (SHARED_HOME, SHARED_SCRATCH)
    }


def check_long_tenant(lab: LabEndpoints, result: OnboardingResult, nodes: list[str]) -> None:
    """Every layer holds the long names as written in the contract."""
    assert result.status == "completed", result.message
    assert result.handover is not None
    assert f"Login host: login.{LONG_SLUG}.example.internal (port 22)" in result.handover.markdown
    assert kubectl(lab, "get", "namespace", LONG_SLUG, "-o", "name").strip() == f"namespace/{LONG_SLUG}"
    assert reserved_nodes(lab, LONG_SLUG) == sorted(nodes)
    assert sacctmgr(lab, "assoc", f"account=ml-team-{LONG_SHORT}", "user") == sorted(["", *LONG_USERS])
    assert sacctmgr(lab, "qos", f"names=normal-{LONG_SHORT},interactive-{LONG_SHORT}", "name") == sorted(
        [f"normal-{LONG_SHORT}", f"interactive-{LONG_SHORT}"]
    )
    for name in LONG_USERS:
        assert groups_of(lab, name) == [f"cn={LONG_SLUG},ou=groups,dc=auth,dc=example,dc=internal"], name
    people = {u["username"]: u for u in world_snapshot(lab)["authentik"]["users"].values()}
    assert (people[LONG_USERS[0]]["name"], people[LONG_USERS[0]]["email"]) == (LONG_NAME, LONG_EMAIL)
    paths = weka_paths(lab)
    assert {f"/{u}" for u in LONG_USERS} <= paths[SHARED_HOME][0] & paths[SHARED_HOME][1]
    assert f"/{LONG_SLUG}" in paths[SHARED_SCRATCH][0] & paths[SHARED_SCRATCH][1]


async def test_long_names_in_the_shared_org_beside_another_tenant_onboard_and_purge_only_their_own(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    """Both tenants onboard at once, on nodes of their own (two onboardings that let tenantflow choose may race
    for the same free nodes, and one then fails: tests/chaos/test_races.py); purging the long-named one removes
    its directories and quotas from the shared filesystems and leaves the neighbour's; purging the neighbour leaves
    the lab as it was."""
    free = free_nodes(lab)
    assert len(free) >= 3, free
    long = TenantContract.model_validate({**LONG, "capacity": {**LONG["capacity"], "nodes": free[:2]}})
    neighbour = TenantContract.model_validate({**NEIGHBOUR, "capacity": {**NEIGHBOUR["capacity"], "nodes": free[2:3]}})
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api:
        results = await asyncio.gather(onboard(api, long), onboard(api, neighbour), return_exceptions=True)
        try:
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            assert isinstance(results[1], OnboardingResult) and results[1].status == "completed", results[1]
            assert isinstance(results[0], OnboardingResult)
            check_long_tenant(lab, results[0], free[:2])

            assert (await offboard(api, long, purge=True)).status == "completed"
            paths = weka_paths(lab)
            left = {f"/{u}" for u in LONG_USERS} & (paths[SHARED_HOME][0] | paths[SHARED_HOME][1])
            assert not left, f"the purged tenant's homes are still on the shared filesystem: {left}"
            assert f"/{LONG_SLUG}" not in paths[SHARED_SCRATCH][0] | paths[SHARED_SCRATCH][1]
            assert "/nia" in paths[SHARED_HOME][0] & paths[SHARED_HOME][1]
            assert "/tenant-nbr" in paths[SHARED_SCRATCH][0] & paths[SHARED_SCRATCH][1]
        finally:
            for contract, result in zip((long, neighbour), results, strict=True):
                if isinstance(result, OnboardingResult):
                    await offboard(api, contract, purge=True)
    assert_only_user_records_left(before, lab, [*LONG_USERS, "nia"])


# -- (c) the most users the contract allows ---------------------------------------------------------------------

MAX_USERS = 500
"""``TenantContract.users``: ``max_length=500``."""
CROWD_USERS = [f"crowd{n:03d}" for n in range(1, MAX_USERS + 1)]
CROWD = tenant(
    "tenant-crowd",
    "Crowd",
    8,
    [user(name, f"Crowd Member {name[5:]}", f"{name}@tenant-crowd.example") for name in CROWD_USERS],
)


def test_the_crowd_is_the_most_users_the_contract_allows() -> None:
    TenantContract.model_validate(CROWD)
    one_more = user("crowd501", "One Too Many", "crowd501@tenant-crowd.example")
    with pytest.raises(ValidationError, match="at most 500 items"):
        TenantContract.model_validate({**CROWD, "users": [*CROWD["users"], one_more]})


def ldap_members(lab: LabEndpoints, group_dn: str) -> set[str]:
    """The ``uid`` of every entry that is ``memberOf`` the group, through the LDAP outpost."""
    command, *rest = lab.ldapsearch(f"(memberOf={group_dn})", "uid")
    out = sh(lab, command, "-o", "ldif-wrap=no", *rest)
    return {line.removeprefix("uid: ") for line in out.splitlines() if line.startswith("uid: ")}


async def test_a_tenant_of_the_most_users_onboards_and_offboards(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    """Every one of the 500 users exists in every layer: an Authentik member of the tenant group, an LDAP entry
    of it, a Slurm association under the team account, a home directory on Weka with its quota."""
    async with onboarded(dev_env, lab, TenantContract.model_validate(CROWD)):
        world = world_snapshot(lab)
        members = {name for name, u in world["authentik"]["users"].items() if "tenant-crowd" in u["groups"]}
        assert members == set(CROWD_USERS)
        assert ldap_members(lab, "cn=tenant-crowd,ou=groups,dc=auth,dc=example,dc=internal") == set(CROWD_USERS)
        assert sacctmgr(lab, "assoc", "account=ml-team-crowd", "user") == sorted(["", *CROWD_USERS])
        home = world["weka"]["filesystems"]["tenant-crowd-home"]
        assert {f"/{u}" for u in CROWD_USERS} <= set(home["directories"])
        assert {q["path"] for q in home["quotas"]} == {f"/{u}" for u in CROWD_USERS}
