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

import hashlib
import os
import subprocess
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.tenant import TenantContract
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


# -- (a) one node, one user -----------------------------------------------------------------------------------

SOLO: dict[str, Any] = {
    "slug": "tenant-solo",
    "display_name": "Solo Research",
    "cluster": CLUSTER,
    "capacity": {"sku": "h100-8x", "gpus": 8},
    "users": [user("sol", "Sol Single", "sol@tenant-solo.example")],
}
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
    contract = TenantContract.model_validate(SOLO)
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api:
        result = await onboard(api, contract)
        try:
            assert result.status == "completed", result.message
            nodes = reserved_nodes(lab, "tenant-solo")
            assert len(nodes) == SOLO_NODES
            check_one_node_handover(result, nodes[0])
            assert sacctmgr(lab, "assoc", "account=tenant-solo", "account,user,grptres") == ["tenant-solo||gres/gpu=8"]
            assert sacctmgr(lab, "assoc", "account=ml-team-solo", "user") == ["", "sol"]
            partition = sh(lab, "scontrol", "-o", "show", "partition", "tenant-solo")
            assert f" Nodes={nodes[0]} " in partition, partition
            assert "memberOf: cn=tenant-solo,ou=groups,dc=auth,dc=example,dc=internal" in sh(
                lab, *lab.ldapsearch("(uid=sol)", "memberOf")
            )
        finally:
            purged = await offboard(api, contract, purge=True)
    assert purged.status == "completed"
    assert_only_user_records_left(before, lab, ["sol"])
