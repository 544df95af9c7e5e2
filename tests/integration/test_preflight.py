"""Every preflight failure of issue 4 against the lab: the run fails with PreflightFailed naming the problem
and the fix, and nothing was written (no journaled write at any HTTP stand-in, the whole world unchanged).

Each case first puts the lab in the state that must be refused (a node reserved elsewhere, a node
reporting fewer GPUs, a wrong setting, an object of another tenant holding the slug), then snapshots.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.weka_client import WekaClient, org_admin_credentials
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.integration.rollback_rig import failure_of, tenant
from tests.integration.world import describe_diff, world_snapshot
from tests.labfixture import exported, journal_writes, lab_worker, reset_journals

Setup = Callable[[LabEndpoints, TenantContract], Iterator[None]]
POOL = "gpu-h100-rack-a"
"""The lab's GPU nodes' ``hardware-pool`` label and the example tenant's pool."""


@pytest_asyncio.fixture(scope="module")
async def api(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> AsyncIterator[TenantflowClient]:
    async with lab_worker(dev_env.client, lab) as client:
        yield client


def _sh(lab: LabEndpoints, *argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        list(argv),
        env={**os.environ, **lab.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        input=stdin,
    )
    return done.stdout


def _kubectl(lab: LabEndpoints, *argv: str, stdin: str | None = None) -> str:
    return _sh(lab, "kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *argv, stdin=stdin)


async def _refused(api: TenantflowClient, lab: LabEndpoints, contract: TenantContract) -> str:
    """Run onboarding, expect PreflightFailed, check nothing was written; return the failure message."""
    before = world_snapshot(lab)
    reset_journals(lab)
    handle = await api.start_onboarding(contract)
    cause = await failure_of(handle)
    assert isinstance(cause, ApplicationError) and cause.type == "PreflightFailed", repr(cause)
    assert sum(journal_writes(lab).values()) == 0, journal_writes(lab)
    after = world_snapshot(lab)
    assert after == before, describe_diff(before, after)
    assert "nothing was written" in cause.message and "(fix: " in cause.message, cause.message
    return cause.message


def free_nodes(lab: LabEndpoints) -> list[str]:
    """The pool's nodes ``kubectl`` shows Ready, schedulable and with no ``reserved.tenant`` label, by name: the
    session's lab is shared by the modules of one test process, so another module's tenant may hold some."""
    free = []
    for node in json.loads(_kubectl(lab, "get", "nodes", "-o", "json"))["items"]:
        labels = node["metadata"].get("labels") or {}
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
        schedulable = not (node.get("spec") or {}).get("unschedulable")
        if ready and schedulable and "reserved.tenant" not in labels and labels.get("hardware-pool") == POOL:
            free.append(node["metadata"]["name"])
    return sorted(free)


async def test_not_enough_healthy_nodes(api: TenantflowClient, lab: LabEndpoints) -> None:
    base = tenant(lab, "pf-nodes")
    contract = base.model_copy(update={"capacity": base.capacity.model_copy(update={"gpus": 136})})
    free = len(free_nodes(lab))
    message = await _refused(api, lab, contract)
    # the lab has 16 h100 nodes, one NotReady and one cordoned
    assert "need 17 healthy unreserved nodes" in message and f"only {free} are available" in message, message
    assert "1 NotReady, 1 cordoned" in message and f"lower capacity.gpus to at most {free * 8}" in message, message


async def test_node_already_reserved(api: TenantflowClient, lab: LabEndpoints) -> None:
    base = tenant(lab, "pf-held")
    nodes = free_nodes(lab)[:8]
    held = nodes[2]
    contract = base.model_copy(update={"capacity": base.capacity.model_copy(update={"nodes": nodes})})
    _kubectl(lab, "label", "node", held, "reserved.tenant=tenant-other")
    try:
        message = await _refused(api, lab, contract)
    finally:
        _kubectl(lab, "label", "node", held, "reserved.tenant-")
    assert f"node {held} is reserved by tenant tenant-other" in message, message
    assert "choose another node; free nodes: " in message, message


async def test_gpu_count_not_matching(api: TenantflowClient, lab: LabEndpoints) -> None:
    contract = tenant(lab, "pf-gpus")
    node = free_nodes(lab)[0]  # the first free node by name is among the ones an onboarding chooses
    patch = '{"status":{"capacity":{"nvidia.com/gpu":"%s"}}}'
    _kubectl(lab, "patch", "node", node, "--subresource=status", "--type=merge", "-p", patch % "4")
    try:
        message = await _refused(api, lab, contract)
    finally:
        _kubectl(lab, "patch", "node", node, "--subresource=status", "--type=merge", "-p", patch % "8")
    assert f"node {node} reports 4 nvidia.com/gpu but a h100-8x node has 8" in message, message
    assert "fix the node's GPU device plugin or pick another node" in message, message


async def test_weka_capacity_below_request_plus_buffer(api: TenantflowClient, lab: LabEndpoints) -> None:
    base = tenant(lab, "pf-weka")
    scratch = base.storage.scratch.model_copy(update={"hard": "1400TB", "soft": "1300TB"})
    contract = base.model_copy(update={"storage": base.storage.model_copy(update={"scratch": scratch})})
    message = await _refused(api, lab, contract)
    assert "storage.capacity: Weka has" in message and "requested + 20%" in message, message
    assert "lower storage.home_filesystem_capacity / storage.scratch.hard" in message, message


async def test_slurm_controller_unreachable(api: TenantflowClient, lab: LabEndpoints) -> None:
    with exported({"SLURM_CONTROLLER_DEPLOYMENT": "slurmctld-typo"}):
        message = await _refused(api, lab, tenant(lab, "pf-slurm"))
    assert "slurm.controller" in message and "slurmctld-typo" in message, message
    assert "SLURM_CONTROLLER_DEPLOYMENT" in message, message


async def test_ldap_outpost_unhealthy(api: TenantflowClient, lab: LabEndpoints) -> None:
    with exported({"LDAP_BIND_PASSWORD": "not-the-bind-password"}):
        message = await _refused(api, lab, tenant(lab, "pf-ldap"))
    assert "identity.ldap_outpost: the LDAP outpost does not answer a bind and search" in message, message
    assert "ldap-bind-creds" in message, message


def _kube_namespace(lab: LabEndpoints, contract: TenantContract) -> Iterator[None]:
    _kubectl(
        lab,
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": contract.namespace, "labels": {"tenant": "tenant-other"}},
            }
        ),
    )
    yield
    _kubectl(lab, "delete", "namespace", contract.namespace, "--wait=false")


def _authentik_group(lab: LabEndpoints, contract: TenantContract) -> Iterator[None]:
    with AuthentikClient.from_settings() as ak:
        group = ak.groups.create({"name": contract.slug, "attributes": {"tenant_slug": "tenant-other"}})
        yield
        ak.groups.delete(group.pk)


def _slurm_account(lab: LabEndpoints, contract: TenantContract) -> Iterator[None]:
    _sh(lab, "sacctmgr", "-i", "add", "account", contract.slug, "organization=other", "cluster=production")
    yield
    _sh(lab, "sacctmgr", "-i", "delete", "account", contract.slug)


def _weka_org(lab: LabEndpoints, contract: TenantContract) -> Iterator[None]:
    with WekaClient.from_settings() as weka:
        org = weka.create_organization(contract.slug, org_admin_credentials("tenant-other"))
        yield
        weka.delete_organization(org.uid)


SLUG_TAKEN: dict[str, tuple[Setup, str]] = {
    "kube": (_kube_namespace, "already exists and belongs to tenant-other: the slug is in use"),
    "authentik": (_authentik_group, "already exists with tenant_slug='tenant-other'"),
    "slurm": (_slurm_account, "belongs to organization other"),
    "weka": (_weka_org, "exists and is not this tenant's"),
}


@pytest.mark.parametrize("layer", sorted(SLUG_TAKEN))
async def test_slug_used_in_a_layer(api: TenantflowClient, lab: LabEndpoints, layer: str) -> None:
    contract = tenant(lab, f"pf-slug-{layer}")
    setup, problem = SLUG_TAKEN[layer]
    with contextmanager(setup)(lab, contract):
        message = await _refused(api, lab, contract)
    assert f"{contract.slug} {problem}" in message, message
