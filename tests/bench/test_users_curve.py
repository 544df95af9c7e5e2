"""Big tenants against the lab (figure (g)): a 40-user tenant onboards in one run with every activity on its first
attempt, and afterwards every user exists in Authentik (member of the tenant group), resolves through LDAP, has
its Slurm association and its Weka home directory with its quota; then it is offboarded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tenantflow.bench.history import activity_spans
from tenantflow.bench.users import crowd
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.run_ids import onboarding_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant
from tests.integration.runs import offboard, onboard
from tests.labfixture import lab_worker, snapshot
from tests.workflows.contract import EXAMPLES

USERS = 40


def ldap_uids(lab: LabEndpoints, contract: TenantContract, scratch: Path) -> set[str]:
    """The ``uid`` of every directory entry that is memberOf the tenant group, read with ldapsearch (the bind
    password from a file, never in argv)."""
    secret = scratch / "bind-password"
    secret.write_text(lab.ldap_bind_password)
    secret.chmod(0o600)
    group = f"cn={contract.slug},ou=groups,{lab.ldap_base_dn}"
    bind = ["-x", "-LLL", "-H", lab.ldap_url, "-D", lab.ldap_bind_dn, "-y", str(secret)]
    out = subprocess.run(
        ["ldapsearch", *bind, "-o", "ldif-wrap=no", "-b", lab.ldap_base_dn, "(uid=*)", "uid", "memberOf"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    members = set()
    for entry in out.split("\n\n"):
        lines = entry.splitlines()
        uid = next((line.split(": ", 1)[1] for line in lines if line.startswith("uid: ")), None)
        if uid and f"memberOf: {group}" in lines:
            members.add(uid)
    return members


def slurm_users(lab: LabEndpoints, contract: TenantContract) -> set[str]:
    """Users with an association under the tenant's user account, read with sacctmgr."""
    out = subprocess.run(
        ["sacctmgr", "-P", "-n", "show", "assoc", f"account={contract.user_account}", "format=user"],
        env={**os.environ, **lab.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return {line for line in out.split() if line}


async def test_a_40_user_tenant_onboards_on_first_attempts_and_every_user_exists_in_every_layer(
    dev_env: WorkflowEnvironment, bench_lab: LabEndpoints, tmp_path: Path
) -> None:
    lab = bench_lab
    template = load_tenant(EXAMPLES / "tenant-foo.yaml")
    contract = crowd(template, "big40", USERS)
    names = set(contract.usernames)
    assert len(names) == USERS
    async with lab_worker(dev_env.client, lab) as api:
        result = await onboard(api, contract)
        try:
            assert result.status == "completed", result.message
            history = await api.handle(onboarding_id(contract.slug)).fetch_history()
            spans = activity_spans(history.events)
            assert {"identity.users", "slurm.users", "storage.quotas"} <= {s.name for s in spans}
            assert [(s.name, s.attempt) for s in spans if s.attempt != 1] == []

            world = snapshot(lab)
            members = {u["username"] for u in world["authentik"]["users"] if contract.slug in u["groups"]}
            assert names <= members
            assert names <= ldap_uids(lab, contract, tmp_path)
            assert names <= slurm_users(lab, contract)
            home = next(f for f in world["weka"]["filesystems"] if f["name"] == f"{contract.slug}-home")
            assert {f"/{n}" for n in names} <= set(home["directories"])
            assert {f"/{n}" for n in names} <= {q["path"] for q in home["quotas"]}
        finally:
            await offboard(api, contract, purge=True)
