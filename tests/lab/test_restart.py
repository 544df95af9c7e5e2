"""A restart of the lab between two onboardings leaves one consistent world (issue 18).

The README's path as a new user takes it: ``lab up``, onboard a tenant, ``lab down``, ``lab up`` on the
same folder, onboard a second tenant with other users. Afterwards the Authentik API, ``ldapsearch``
(slapd), ``sacctmgr``/``scontrol`` (the Slurm database and controller) and ``kubectl`` (the Kubernetes
emulators, and getent in the slurmctld pod) all show both tenants' users with the same uidNumbers, every
number held once, and the two tenants' nodes disjoint. Before the stand-ins kept their state, Authentik
restarted its pks and handed the second tenant the uidNumbers LDAP still held for the first.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.supervisor import LabStateError, down, up
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant
from tests.integration.runs import onboard
from tests.labfixture import lab_worker
from tests.workflows.contract import EXAMPLES

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the lab's real slapd and Slurm need root")


def small_tenant(lab: LabEndpoints, tag: str, names: tuple[str, ...]) -> TenantContract:
    """The runbook's example tenant on two nodes as ``tenant-<tag>`` with users ``<name>-<tag>``."""
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml")
    users = [
        u.model_copy(update={"username": f"{name}-{tag}", "email": f"{name}@tenant-{tag}.example"})
        for u, name in zip(foo.users, names, strict=False)
    ]
    return foo.model_copy(
        update={
            "slug": f"tenant-{tag}",
            "display_name": f"Tenant {tag}",
            "users": users,
            "capacity": foo.capacity.model_copy(update={"gpus": 16}),
            "slurm": foo.slurm.model_copy(update={"team_account": f"ml-team-{tag}"}),
            "login": foo.login.model_copy(update={"hostname": None}),
        }
    )


def sh(lab: LabEndpoints, *argv: str) -> str:
    done = subprocess.run(
        list(argv), env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def kubectl(lab: LabEndpoints, *argv: str) -> str:
    return sh(lab, "kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *argv)


def authentik_view(lab: LabEndpoints) -> tuple[dict[str, int], dict[str, int]]:
    """uidNumber of every active user and gidNumber of every tenant group, as the Authentik API gives them."""
    with httpx.Client(
        base_url=f"{lab.authentik_url}/api/v3", timeout=10, headers={"Authorization": f"Bearer {lab.authentik_token}"}
    ) as ak:
        start = ak.get("/providers/ldap/").json()["results"][0]["uid_start_number"]
        users = ak.get("/core/users/", params={"page_size": 500}).json()["results"]
        groups = ak.get("/core/groups/", params={"page_size": 500}).json()["results"]
    uids = {u["username"]: int(u["attributes"].get("uidNumber", start + u["pk"])) for u in users if u["is_active"]}
    gids = {g["name"]: int(g["attributes"]["gidNumber"]) for g in groups if "tenant_slug" in g["attributes"]}
    return uids, gids


def ldap_view(lab: LabEndpoints) -> dict[str, dict[str, str]]:
    """Every entry holding a uidNumber or gidNumber, by DN, as ldapsearch shows it (bound as the outpost's user,
    the password read from its file)."""
    ldif = sh(
        lab,
        "ldapsearch",
        "-x",
        "-LLL",
        "-o",
        "ldif-wrap=no",
        "-H",
        lab.ldap_url,
        "-D",
        lab.ldap_bind_dn,
        "-y",
        str(lab.state_dir / "ldap" / "bind.password"),
        "-b",
        lab.ldap_base_dn,
        "(|(uidNumber=*)(gidNumber=*))",
        "uidNumber",
        "gidNumber",
    )
    entries: dict[str, dict[str, str]] = {}
    for block in ldif.strip().split("\n\n"):
        attrs = dict(line.split(": ", 1) for line in block.splitlines())
        entries[attrs.pop("dn")] = attrs
    return entries


def check_one_world(lab: LabEndpoints, tenants: list[TenantContract]) -> None:
    uids, gids = authentik_view(lab)
    ldap = ldap_view(lab)
    users_dn = f"ou=users,{lab.ldap_base_dn}"
    ldap_uids = {dn.split(",")[0][3:]: int(e["uidNumber"]) for dn, e in ldap.items() if "uidNumber" in e}
    held = [int(e["uidNumber"]) for e in ldap.values() if "uidNumber" in e]
    assert len(held) == len(set(held)), f"a uidNumber is held twice in LDAP: {sorted(held)}"
    for contract in tenants:
        gid = gids[contract.slug]
        assert int(ldap[f"cn={contract.slug},ou=groups,{lab.ldap_base_dn}"]["gidNumber"]) == gid
        nodes = kubectl(lab, "get", "nodes", "-l", f"reserved.tenant={contract.slug}", "-o", "name").split()
        assert len(nodes) == 2, (contract.slug, nodes)
        kubectl(lab, "get", "namespace", contract.slug)
        accounts = {contract.slug, contract.slurm.team_account}
        for user in contract.usernames:
            uid = uids[user]
            assert ldap_uids[user] == uid, f"{user}: Authentik says {uid}, LDAP {ldap_uids[user]}"
            assert int(ldap[f"cn={user},{users_dn}"]["gidNumber"]) == gid
            passwd = kubectl(lab, "-n", "slurm-control", "exec", "deploy/slurmctld", "--", "getent", "passwd", user)
            assert passwd.split(":")[2:4] == [str(uid), str(gid)], passwd
            assocs = sh(lab, "sacctmgr", "-P", "-n", "show", "assoc", f"user={user}", "format=account").split()
            assert assocs and set(assocs) <= accounts, (user, assocs)
            assoc_mgr = sh(lab, "scontrol", "show", "assoc_mgr", f"users={user}", "flags=assoc")
            assert set(re.findall(rf"UserName={re.escape(user)}\((\d+)\)", assoc_mgr)) == {str(uid)}, assoc_mgr
    first, second = (
        {n for n in kubectl(lab, "get", "nodes", "-l", f"reserved.tenant={c.slug}", "-o", "name").split()}
        for c in tenants
    )
    assert not first & second, "a node is reserved for both tenants"


@needs_root
async def test_a_restart_between_two_onboardings_leaves_one_world(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    state = tmp_path / "lab"
    try:
        lab = up(state)
        before = small_tenant(lab, "rsa", ("alice", "bob", "carol"))
        async with lab_worker(dev_env.client, lab) as api:
            assert (await onboard(api, before)).status == "completed"
        down(state)

        lab = up(state)
        after = small_tenant(lab, "rsb", ("dave", "erin"))
        async with lab_worker(dev_env.client, lab) as api:
            result = await onboard(api, after)
        assert result.status == "completed", result.message
        check_one_world(lab, [before, after])
    finally:
        down(state)


@needs_root
def test_lab_up_reset_wipes_every_part_together(tmp_path: Path) -> None:
    state = tmp_path / "lab"
    try:
        lab = up(state)
        kubectl(lab, "create", "namespace", "left-over")
        with httpx.Client(
            base_url=f"{lab.authentik_url}/api/v3",
            timeout=10,
            headers={"Authorization": f"Bearer {lab.authentik_token}"},
        ) as ak:
            ak.post("/core/users/", json={"username": "left-over", "name": "Left Over"}).raise_for_status()
        assert "left-over" in authentik_view(lab)[0] and f"cn=left-over,ou=users,{lab.ldap_base_dn}" in ldap_view(lab)
        lab = up(state, reset=True)
        assert "namespace/left-over" not in kubectl(lab, "get", "namespaces", "-o", "name").split()
        assert not [dn for dn in ldap_view(lab) if dn.startswith("cn=left-over")]
        assert set(authentik_view(lab)[0]) == {"ldap-bind"}
    finally:
        down(state)


def test_a_folder_whose_stand_ins_saved_nothing_is_refused_naming_reset(tmp_path: Path) -> None:
    state = tmp_path / "lab"
    state.mkdir()
    (state / "lab.json").write_text("{}")
    with pytest.raises(LabStateError, match="--reset"):
        up(state)
    assert sorted(p.name for p in state.iterdir()) == ["lab.json"], "nothing was started"
    other = tmp_path / "not-a-lab"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(LabStateError, match="does not look like a lab state folder"):
        up(other, reset=True)
    assert (other / "notes.txt").exists()
