"""Every Kubernetes object planned for a drawn contract is one the apiserver takes, with the contract's values,
and the plan's hash depends on the contract and nothing else.

Objects are checked with the schemas the lab's apiserver enforces (:mod:`lab.kubeapi.validation`: the strict
Kubernetes 1.32 schemas of ``kubernetes-validate`` for built-in kinds, the CRDs' ``openAPIV3Schema`` for the
Reservation, ReservationBinding and HelmRelease) and with the apiserver's rules the schemas do not express,
written out here from ``k8s.io/apimachinery/pkg/util/validation`` and ``pkg/apis/core/validation``: DNS names,
label syntax, Secret keys and size, and LimitRange defaults (``ValidateLimitRange``: a default request above
the default limit is refused). Quantities are compared with the Kubernetes client's own parser.
"""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

from hypothesis import given
from kubernetes.utils import parse_quantity

from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.kubeobjects import RUNBOOK_RESERVATION_API
from tenantflow.activities.kube import steps as kube
from tenantflow.lab.kubeapi import validation
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import seed_tenant_cluster
from tenantflow.models.plan import Plan, PlanStep
from tenantflow.models.tenant import TenantContract
from tenantflow.models.units import format_kube_quantity
from tests.generated.profile import GENERATED
from tests.generated.strategies import Drawn, contract_of, contracts
from tests.runbook_manifests import OUTPOST_PORTS

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MAX_SECRET_BYTES = 1024 * 1024
"""``core.MaxSecretSize``: the apiserver refuses a Secret whose decoded data adds up to more."""
CLUSTER_SCOPED = {"Namespace", "Reservation"}

_store = Store()
seed_tenant_cluster(_store, node_count=1)


def nodes_of(drawn: Drawn, contract: TenantContract) -> list[str]:
    return list(contract.capacity.nodes or [f"gpu-{i:05d}" for i in range(1, drawn.node_count + 1)])


def planned_objects(contract: TenantContract, nodes: list[str]) -> list[dict[str, Any]]:
    """Every object onboarding writes that is rendered from the contract alone."""
    login = manifests.login_release(
        contract,
        ldap_uri="ldaps://ldap.auth.svc:636",
        ldap_base_dn="dc=ldap,dc=goauthentik,dc=io",
        ldap_bind_dn="cn=ldapservice,ou=users,dc=ldap,dc=goauthentik,dc=io",
        bind_password_secret="ldap-bind-creds",
        slurm_controller_host="slurmctld.slurm-control.svc",
        chart_source=("flux-system", "sunk"),
    )
    return [
        manifests.reservation(contract, nodes, RUNBOOK_RESERVATION_API),
        *(obj for objects in kube.step_manifests(contract, OUTPOST_PORTS).values() for obj in objects),
        manifests.authorized_keys_secret(contract),
        manifests.bind_secret_copy(contract, "ldap-bind-creds", {"password": "c2VjcmV0"}),
        login,
    ]


def apiserver_problems(obj: dict[str, Any]) -> list[str]:
    """What the apiserver would refuse in ``obj`` beyond its schema."""
    meta, kind = obj["metadata"], obj["kind"]
    problems = []
    name_rule = DNS_LABEL if kind == "Namespace" else DNS_SUBDOMAIN
    if not name_rule.match(meta["name"]) or len(meta["name"]) > (63 if kind == "Namespace" else 253):
        problems.append(f"name {meta['name']!r}")
    if (kind in CLUSTER_SCOPED) == ("namespace" in meta):
        problems.append("namespace set on a cluster-scoped kind or missing on a namespaced one")
    for key, value in meta.get("labels", {}).items():
        if len(value) > 63 or not LABEL_VALUE.match(value):
            problems.append(f"label {key}={value!r}")
    if kind == "Secret":
        decoded = {key: base64.b64decode(value, validate=True) for key, value in obj["data"].items()}
        problems += [f"Secret key {key!r}" for key in decoded if not SECRET_KEY.match(key)]
        if sum(map(len, decoded.values())) > MAX_SECRET_BYTES:
            problems.append(f"Secret data of {sum(map(len, decoded.values()))} bytes")
    if kind == "LimitRange":
        for limit in obj["spec"]["limits"]:
            for resource, request in limit["defaultRequest"].items():
                if parse_quantity(request) > parse_quantity(limit["default"][resource]):
                    problems.append(f"defaultRequest.{resource} {request} above default {limit['default'][resource]}")
    return problems


@GENERATED
@given(contracts())
def test_every_planned_object_passes_the_strict_schemas_and_the_apiservers_rules(drawn: Drawn) -> None:
    contract = contract_of(drawn)
    for obj in planned_objects(contract, nodes_of(drawn, contract)):
        found = validation.check(_store.registry.for_object(obj), obj, obj["apiVersion"].rpartition("/")[2])
        where = f"{obj['kind']} {obj['metadata']['name']}"
        assert not found.errors and not found.unknown, f"{where}: {found}"
        assert not apiserver_problems(obj), f"{where}: {apiserver_problems(obj)}"
        labels = obj["metadata"]["labels"]
        assert (labels[manifests.MANAGED_BY], labels[manifests.TENANT_LABEL]) == ("tenantflow", drawn.data["slug"])


@GENERATED
@given(contracts())
def test_quota_and_reservation_carry_the_contracts_values_and_the_tenant_pvc_fits_the_quota(drawn: Drawn) -> None:
    contract, data = contract_of(drawn), drawn.data
    quota = data["kube_quota"]
    assert manifests.resource_quota(contract)["spec"]["hard"] == {
        "requests.nvidia.com/gpu": str(drawn.node_count * drawn.gpus_per_node),
        "requests.cpu": quota["requests_cpu"],
        "requests.memory": quota["requests_memory"],
        "limits.memory": quota["limits_memory"],
        "persistentvolumeclaims": str(quota["persistentvolumeclaims"]),
        "requests.storage": quota["requests_storage"],
    }
    nodes = nodes_of(drawn, contract)
    spec = manifests.reservation(contract, random.Random(0).sample(nodes, len(nodes)), RUNBOOK_RESERVATION_API)["spec"]
    assert spec["reservedNodes"] == sorted(nodes) and len(set(spec["reservedNodes"])) == drawn.node_count
    assert spec["evictOnRelease"] is data["capacity"]["evict_on_release"]
    pvc_request = format_kube_quantity(drawn.bytes["storage.pvc_size"])
    assert parse_quantity(pvc_request) == drawn.bytes["storage.pvc_size"]
    assert parse_quantity(pvc_request) <= parse_quantity(quota["requests_storage"])
    assert quota["persistentvolumeclaims"] >= 1


class EmptyCluster:
    """A cluster holding nothing yet: every read finds no object (what ``KubeObjects.get`` answers for a 404)."""

    def get(self, kind: str, name: str, namespace: str | None = None) -> None:
        return None


def kube_plan(contract: TenantContract, nodes: list[str]) -> Plan:
    """The plan of the objects rendered from the contract, in an empty cluster, as the kube layer builds it."""
    objects = [manifests.reservation(contract, nodes, RUNBOOK_RESERVATION_API), *planned_objects(contract, nodes)[1:-3]]
    steps = [
        kubeensure.plan_step(EmptyCluster(), "kube", obj, contract.slug, kube._detail(contract, obj, OUTPOST_PORTS))  # type: ignore[arg-type]
        for obj in objects
    ]
    return Plan(title=f"onboard {contract.slug}", steps=steps)


@GENERATED
@given(contracts())
def test_the_plan_hash_depends_on_the_contract_only(drawn: Drawn) -> None:
    contract = contract_of(drawn)
    nodes = nodes_of(drawn, contract)
    plan = kube_plan(contract, nodes)
    shuffled = json.loads(json.dumps(drawn.data, sort_keys=True))
    reread = TenantContract.model_validate_json(contract.model_dump_json())
    assert kube_plan(TenantContract.model_validate(shuffled), nodes[::-1]).plan_hash == plan.plan_hash
    assert kube_plan(reread, nodes).plan_hash == plan.plan_hash
    assert Plan(title="other", steps=plan.steps, notes=["a note"]).plan_hash == plan.plan_hash
    first = plan.steps[0]
    changed = PlanStep(**{**first.model_dump(), "detail": {**first.detail, "changed": True}})
    assert Plan(title=plan.title, steps=[changed, *plan.steps[1:]]).plan_hash != plan.plan_hash
    assert all(step.action.value == "create" for step in plan.steps)
