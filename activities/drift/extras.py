"""What is there but not in the contract: the drift an onboarding plan cannot see, since it looks only at what it wants.

* identity: members of the tenant's Authentik group whose username the contract does not list
  (``GET /api/v3/core/groups/?name=`` with ``users_obj``, Authentik API v3);
* slurm: user associations under the tenant's accounts for users the contract does not list
  (``sacctmgr show assoc``, the read the plan makes);
* kube: NetworkPolicies in the tenant namespace labelled as tenantflow's for this tenant that the contract does
  not render (``GET .../networkpolicies?labelSelector=``). Policies the tenant's admins made (the ``edit``
  ClusterRole allows it) carry no such label and are not drift.

And, for an object the plan would update, which fields differ from the contract: the owned fields of a Kubernetes
object (the comparison :mod:`activities.common.kubeensure` makes), the sacctmgr fields of a Slurm account, QoS or
user association (the comparison the Slurm plan makes, :func:`activities.slurm.accounting.differences`).
"""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.kubeensure import owned
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.kube.steps import current_manifests
from tenantflow.activities.slurm.accounting import current_values, differences, read_world
from tenantflow.activities.slurm.wants import want_account_qos, want_accounts, want_qos, want_users
from tenantflow.models import runbook
from tenantflow.models.drift import DriftItem, DriftKind
from tenantflow.models.tenant import TenantContract


def extra(layer: str, kind: str, name: str, detail: str, namespace: str | None = None) -> DriftItem:
    return DriftItem(layer=layer, kind=kind, name=name, namespace=namespace, drift=DriftKind.extra, detail=detail)


def identity_extras(contract: TenantContract) -> list[DriftItem]:
    """Members of the tenant's group the contract does not list."""
    with AuthentikClient.from_settings() as ak:
        group = ak.groups.named(contract.slug)
    if group is None:
        return []
    wanted = set(contract.usernames)
    return [
        extra("identity", "GroupMember", member.username, f"member of group {contract.slug}, not in the contract")
        for member in sorted(group.users_obj or [], key=lambda u: u.username)
        if member.username not in wanted
    ]


def slurm_extras(contract: TenantContract) -> list[DriftItem]:
    """User associations under the tenant's accounts for users the contract does not list."""
    world = read_world(SlurmCtl.connect(contract.cluster), contract)
    wanted = set(contract.usernames)
    return [
        extra("slurm", "user", assoc.user, f"association in account {assoc.account}, not in the contract")
        for assoc in sorted(world.assocs, key=lambda a: (a.user, a.account))
        if assoc.user and assoc.user not in wanted
    ]


def kube_extras(contract: TenantContract) -> list[DriftItem]:
    """NetworkPolicies labelled as this tenant's that the contract does not render."""
    selector = ",".join(f"{key}={value}" for key, value in manifests.owner_labels(contract.slug).items())
    found = KubeObjects(contract.cluster).list("NetworkPolicy", contract.namespace, selector)
    wanted = {obj["metadata"]["name"] for obj in current_manifests(contract)[runbook.KUBE_NETWORK_POLICY]}
    return [
        extra("kube", "NetworkPolicy", name, "labelled as this tenant's, not in the contract", contract.namespace)
        for name in sorted(str(obj["metadata"]["name"]) for obj in found)
        if name not in wanted
    ]


def leaf_differences(want: Any, have: Any, path: str = "", in_resource_list: bool = False) -> list[str]:
    """``path: have (want W)`` for every leaf of ``want`` whose value ``have`` does not hold (compared as
    :func:`activities.common.kubeensure.matches` compares them)."""
    if isinstance(want, dict) and want:
        have = have if isinstance(have, dict) else {}
        return [
            d
            for key, value in want.items()
            for d in leaf_differences(
                value, have.get(key), f"{path}.{key}", kubeensure.quantity_child(key, value, in_resource_list)
            )
        ]
    return [] if kubeensure.matches(want, have, in_resource_list) else [f"{path.lstrip('.')}: {have} (want {want})"]


def kube_changes(contract: TenantContract, item: DriftItem) -> str:
    """The owned fields of a changed Kubernetes object that differ from what the contract renders."""
    desired = next(
        (
            obj
            for objects in current_manifests(contract).values()
            for obj in objects
            if (obj["kind"], obj["metadata"]["name"]) == (item.kind, item.name)
        ),
        None,
    )
    existing = KubeObjects(contract.cluster).get(item.kind, item.name, item.namespace) if desired else None
    if desired is None or existing is None:
        return item.detail
    return "; ".join(leaf_differences(owned(desired), existing)) or item.detail


def slurm_changes(contract: TenantContract, items: list[DriftItem]) -> list[DriftItem]:
    """``items`` with each changed Slurm object's detail naming its differing fields: ``Field: found (want W)``."""
    changed = [i for i in items if i.layer == "slurm" and i.drift is DriftKind.changed]
    if not changed:
        return items
    wants = {
        (w.kind, w.name): w
        for w in [*want_accounts(contract), *want_qos(contract), want_account_qos(contract), *want_users(contract)]
    }
    world = read_world(SlurmCtl.connect(contract.cluster), contract)

    def detail(item: DriftItem) -> str:
        want = wants.get((item.kind, item.name))
        have = current_values(world, want) if want is not None else None
        if want is None or have is None:
            return item.detail
        fields = differences(want, have)
        return "; ".join(f"{k}: {fields[k] or '(none)'} (want {want.values[k]})" for k in fields) or item.detail

    return [item.model_copy(update={"detail": detail(item)}) if item in changed else item for item in items]
