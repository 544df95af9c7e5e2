"""The main job against the lab and the real Temporal dev server: onboard tenant-foo end to end.

The tenant is offboarded (data purged) at the end, so the session's lab is left as it was found.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.kubeobjects import KINDS
from tenantflow.lab.authentik.versions import AUTHENTIK_2024_10
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tests.integration.runs import offboard, onboard
from tests.labfixture import exec_commands, journal_writes, lab_worker, reset_journals, snapshot, whole_lab
from tests.workflows.contract import EXAMPLES


def sh(lab: LabEndpoints, *argv: str) -> str:
    done = subprocess.run(
        list(argv), env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def check_runbook_objects(lab: LabEndpoints, result: OnboardingResult) -> None:
    """What the runbook's own commands show after onboarding (kubectl, ldapsearch, sacctmgr)."""
    assert result.status == "completed", result.message
    assert result.handover is not None
    smoke = {f.check: f for f in result.findings if f.check.startswith("smoke.")}
    assert sorted(smoke) == ["smoke.nccl", "smoke.single_node", "smoke.storage"], result.findings
    assert all(f.ok for f in smoke.values()), smoke
    assert "Login host: login.tenant-foo.example.internal (port 22)" in result.handover.markdown
    assert "Slurm account:    ml-team-foo" in result.handover.markdown

    kubectl = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster"]
    nodes = sh(lab, *kubectl, "get", "nodes", "-l", "reserved.tenant=tenant-foo", "-o", "name").split()
    assert len(nodes) == 8
    labels = sh(
        lab,
        *kubectl,
        "get",
        "namespace",
        "tenant-foo",
        "-o",
        "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}",
    )
    assert labels == "baseline"
    ldap = sh(lab, *lab.ldapsearch("(uid=alice)", "uidNumber", "gidNumber", "memberOf"))
    assert "memberOf: cn=tenant-foo,ou=groups,dc=auth,dc=example,dc=internal" in ldap
    assoc = sh(
        lab,
        "sacctmgr",
        "show",
        "assoc",
        "account=tenant-foo",
        "format=account,user,fairshare,grptres,grpjobs",
        "-P",
        "-n",
    )
    assert "tenant-foo||300|gres/gpu=64|200" in assoc


def check_interactive_srun(lab: LabEndpoints, contract: TenantContract) -> None:
    """An interactive ``srun`` from the login pod, as a tenant user and group (root's ``--uid``/``--gid``, as the
    smoke jobs are submitted), run on a node whose slurmd is up (the lab's outpost Service maps 636 to pod port
    6636, and the tenant's policy must let srun reach slurmctld and slurmd and slurmd reach back on SrunPortRange)."""
    up = [
        line.split()[0]
        for line in sh(lab, "sinfo", "-h", "-N", "-p", contract.slug, "-o", "%N %t").splitlines()
        if line.split()[1] in {"idle", "mix", "alloc"}
    ]
    assert up, "the smoke tests left no tenant node with a running slurmd"
    kubectl = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", contract.cluster.context]
    user = contract.users[0].username
    srun = [
        "srun",
        f"--uid={user}",
        f"--gid={contract.slug}",
        f"--partition={contract.slug}",
        f"--account={contract.user_account}",
        f"--nodelist={up[0]}",
        "--time=00:01:00",
        "--chdir=/tmp",
        "printenv",
        "SLURMD_NODENAME",
    ]
    argv = [*kubectl, "-n", contract.namespace, "exec", f"login-{contract.slug}-0", "--", *srun]
    done = subprocess.run(argv, env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=90)
    assert (done.returncode, done.stdout.strip()) == (0, up[0]), done.stderr


def check_field_managers(lab: LabEndpoints, contract: TenantContract, result: OnboardingResult) -> None:
    """Every Kubernetes object the onboarding wrote lists the field manager ``tenantflow`` (issue 14), read back
    with kubectl; none names the client's default (``OpenAPI-Generator``)."""
    written = [r for r in result.applied if r.wrote and r.kind in KINDS]
    assert written, result.applied
    kubectl = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", contract.cluster.context]
    for res in written:
        kind = KINDS[res.kind]
        group = kind.api_version.rpartition("/")[0]
        where = ["-n", res.namespace] if res.namespace else []
        resource = f"{kind.plural}.{group}" if group else kind.plural
        obj = json.loads(sh(lab, *kubectl, "get", resource, res.name, *where, "--show-managed-fields", "-o", "json"))
        managers = {entry["manager"] for entry in obj["metadata"]["managedFields"]}
        assert "tenantflow" in managers and "OpenAPI-Generator" not in managers, (res, managers)


def reconfigures(lab: LabEndpoints) -> int:
    """``scontrol reconfigure`` commands the slurmctld pod was asked to run since the journals were reset."""
    return sum(1 for argv in exec_commands(lab) if argv == ["scontrol", "reconfigure"])


async def check_rerun_writes_nothing(api: TenantflowClient, lab: LabEndpoints, contract: TenantContract) -> None:
    reset_journals(lab)
    again = await onboard(api, contract)
    assert again.status == "completed"
    assert all(not r.wrote for r in again.applied), [r for r in again.applied if r.wrote]
    assert sum(journal_writes(lab).values()) == 0, journal_writes(lab)
    assert reconfigures(lab) == 0, "an unchanged partition needs no scontrol reconfigure"


@pytest.fixture(scope="module")
def lab_authentik_2024_10(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """A second whole lab whose Authentik plays 2024.10 (groups nest through a single ``parent``)."""
    yield from whole_lab(tmp_path_factory, "lab-authentik-2024", authentik_version=AUTHENTIK_2024_10)


@pytest.fixture(params=["current", "2024.10"])
def any_lab(request: pytest.FixtureRequest) -> LabEndpoints:
    """The session's lab (Authentik current), then a lab playing Authentik 2024.10."""
    lab: LabEndpoints = request.getfixturevalue("lab" if request.param == "current" else "lab_authentik_2024_10")
    return lab


def check_tenant_group_nested(lab: LabEndpoints) -> None:
    groups = {g["name"]: g for g in snapshot(lab)["authentik"]["groups"]}
    assert groups["tenant-foo"]["parents"] == ["tenants"], groups["tenant-foo"]


async def test_onboard_tenant_foo_end_to_end_then_rerun_writes_nothing(
    dev_env: WorkflowEnvironment, any_lab: LabEndpoints
) -> None:
    lab = any_lab
    contract = load_tenant(EXAMPLES / "tenant-foo.yaml")
    async with lab_worker(dev_env.client, lab) as api:
        reset_journals(lab)
        result = await onboard(api, contract)
        try:
            check_runbook_objects(lab, result)
            check_interactive_srun(lab, contract)
            assert reconfigures(lab) == 1, "one onboarding issues exactly one scontrol reconfigure (issue 23)"
            check_field_managers(lab, contract, result)
            check_tenant_group_nested(lab)
            await check_rerun_writes_nothing(api, lab, contract)
        finally:
            await offboard(api, contract, purge=True)
