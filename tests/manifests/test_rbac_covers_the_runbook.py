"""The worker's RBAC in deploy/base/rbac.yaml grants every write the runbook makes in the target cluster: each
object the kube, capacity, storage and login layers ensure (get, create, patch, delete), and ``bind`` on exactly
the ClusterRole the tenant RoleBinding names. A new kind in the runbook without a rule fails here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tenantflow.activities.common import manifests
from tenantflow.activities.common.kubeobjects import RUNBOOK_RESERVATION_API
from tenantflow.activities.kube import steps as kube
from tenantflow.models.tenant import TenantContract
from tests.runbook_manifests import OUTPOST_PORTS
from tests.workflows.contract import example_tenant

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "base" / "rbac.yaml"
ENSURE = {"get", "create", "patch", "delete"}


def written(contract: TenantContract) -> list[dict[str, Any]]:
    objects = [obj for step in kube.step_manifests(contract, OUTPOST_PORTS).values() for obj in step]
    objects += [
        manifests.reservation(contract, ["gpu-01"], RUNBOOK_RESERVATION_API),
        manifests.authorized_keys_secret(contract),
        manifests.bind_secret_copy(contract, "ldap-bind", {"password": "x"}),
        manifests.login_release(
            contract,
            ldap_uri="ldaps://ldap",
            ldap_base_dn="dc=x",
            ldap_bind_dn="cn=x",
            bind_password_secret="ldap-bind",
            slurm_controller_host="slurmctld",
            chart_source=("flux-system", "sunk"),
        ),
    ]
    return objects


def plural(kind: str) -> str:
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + "s"


def granted(rules: list[dict[str, Any]], group: str, resource: str, name: str | None = None) -> set[str]:
    verbs: set[str] = set()
    for rule in rules:
        if (
            group in rule["apiGroups"]
            and resource in rule["resources"]
            and ("resourceNames" not in rule or name in rule["resourceNames"])
        ):
            verbs |= set(rule["verbs"])
    return verbs


@pytest.fixture(scope="module")
def cluster_rules() -> list[dict[str, Any]]:
    (role,) = [doc for doc in yaml.safe_load_all(RBAC.read_text()) if doc["kind"] == "ClusterRole"]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


@pytest.mark.parametrize("slug", ["tenant-foo", "tenant-bar"])
def test_every_object_the_runbook_ensures_is_granted(cluster_rules: list[dict[str, Any]], slug: str) -> None:
    for obj in written(example_tenant(slug)):
        group = obj["apiVersion"].rpartition("/")[0]
        verbs = granted(cluster_rules, group, plural(obj["kind"]))
        assert verbs >= ENSURE, f"{obj['kind']} ({group or 'core'}): missing {sorted(ENSURE - verbs)}"


def test_bind_only_the_role_the_tenant_binding_names(cluster_rules: list[dict[str, Any]]) -> None:
    role = manifests.admins_role_binding(example_tenant())["roleRef"]["name"]
    assert "bind" in granted(cluster_rules, "rbac.authorization.k8s.io", "clusterroles", role)
    assert "bind" not in granted(cluster_rules, "rbac.authorization.k8s.io", "clusterroles", "cluster-admin")
    assert "bind" not in granted(cluster_rules, "rbac.authorization.k8s.io", "clusterroles", "admin")
