"""The worker's RBAC, enforced: every object the runbook ensures is applied and deleted with kubectl by a user that
has exactly the rules of deploy/base/rbac.yaml, on the lab's Kubernetes emulator (which enforces per-token rules);
the same user without one of those verbs is refused. Rules limited by resourceNames are left out of the user's
policy (the emulator's rules cannot name objects), so the check is stricter than the real grant."""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from tenantflow.lab.kubeapi.auth import parse_policies
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.kubeapi.tls import self_signed
from tests.manifests.test_rbac_covers_the_runbook import RBAC, written
from tests.workflows.contract import example_tenant

CRDS = Path(__file__).resolve().parents[2] / "lab" / "crds"


def policy_rules(rbac: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The emulator's form of the ClusterRole's and Roles' rules (cluster-wide for the ClusterRole)."""
    rules = []
    for role in rbac:
        if role["kind"] not in {"ClusterRole", "Role"}:
            continue
        namespaces = ["*"] if role["kind"] == "ClusterRole" else [role["metadata"]["namespace"]]
        rules += [
            {
                "verbs": rule["verbs"],
                "apiGroups": rule["apiGroups"],
                "resources": rule["resources"],
                "namespaces": namespaces,
            }
            for rule in role["rules"]
            if "resourceNames" not in rule
        ]
    return rules


def without(rules: list[dict[str, Any]], resource: str, verb: str) -> list[dict[str, Any]]:
    trimmed = copy.deepcopy(rules)
    for rule in trimmed:
        if resource in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    return trimmed


@pytest_asyncio.fixture(scope="module")
async def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Path]:
    store = Store()
    store.seed([yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))])
    rules = policy_rules(list(yaml.safe_load_all(RBAC.read_text())))
    policies = parse_policies(
        {
            "worker-token": {"user": "system:serviceaccount:tenantflow:tenantflow-worker", "rules": rules},
            "no-delete-token": {"user": "trimmed", "rules": without(rules, "networkpolicies", "delete")},
            "no-create-token": {"user": "trimmed", "rules": without(rules, "limitranges", "create")},
        }
    )
    cert = self_signed()
    runner, url = await start_kube_api(
        build_app(store, name="rbac", policies=policies), ssl_context=cert.server_context()
    )
    path = write_kubeconfig(
        tmp_path_factory.mktemp("rbac") / "kubeconfig",
        [
            KubeContext(name, url, f"{name}-token", ca_pem=cert.cert_pem)
            for name in ("worker", "no-delete", "no-create")
        ],
    )
    yield path
    await runner.cleanup()


async def kubectl(kubeconfig: Path, context: str, *args: str, stdin: str = "") -> tuple[int, str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(kubeconfig.parent / "cache")}
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--context",
        context,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def documents(slug: str) -> str:
    return yaml.safe_dump_all(written(example_tenant(slug)))


async def test_the_worker_ensures_and_removes_every_runbook_object(kubeconfig: Path) -> None:
    objects = written(example_tenant("tenant-foo"))
    code, out = await kubectl(kubeconfig, "worker", "apply", "-f", "-", stdin=documents("tenant-foo"))
    assert code == 0 and out.count(" created") == len(objects), out
    code, out = await kubectl(kubeconfig, "worker", "apply", "-f", "-", stdin=documents("tenant-foo"))
    assert code == 0 and out.count(" unchanged") == len(objects), out
    code, out = await kubectl(
        kubeconfig, "worker", "delete", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(list(reversed(objects)))
    )
    assert code == 0 and out.count(" deleted") == len(objects), out


async def test_without_create_on_limitranges_the_apply_is_refused(kubeconfig: Path) -> None:
    code, out = await kubectl(kubeconfig, "no-create", "apply", "-f", "-", stdin=documents("tenant-no-create"))
    assert code != 0 and "forbidden" in out.lower() and "limitranges" in out, out


async def test_without_delete_on_networkpolicies_the_removal_is_refused(kubeconfig: Path) -> None:
    code, out = await kubectl(kubeconfig, "worker", "apply", "-f", "-", stdin=documents("tenant-no-delete"))
    assert code == 0, out
    code, out = await kubectl(
        kubeconfig, "no-delete", "delete", "--wait=false", "-f", "-", stdin=documents("tenant-no-delete")
    )
    assert code != 0 and "forbidden" in out.lower() and "networkpolicies" in out, out
