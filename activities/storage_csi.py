"""The CSI objects of a strictly isolated tenant (runbook 6c): org token Secret, StorageClass and PVC.

The org API token goes only into Secret ``weka-<slug>-creds`` in the tenant namespace (created here,
written there, never returned or logged), followed by StorageClass ``weka-<slug>`` (Retain) and the
tenant PVC. :func:`undo_csi` revokes the token and deletes what a run created.
"""

from __future__ import annotations

import base64
from typing import Any

from tenantflow.activities.errors import fail
from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.activities.settings import settings
from tenantflow.activities.storage_layout import (
    LAYER,
    deleted,
    filesystem_names,
    plan_action,
    storage_result,
)
from tenantflow.activities.weka_client import WekaClient
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Kept, Outcome, PvcSize, TokenRef
from tenantflow.models.tenant import TenantContract
from tenantflow.models.units import format_kube_quantity, parse_size

TOKEN_UID_ANNOTATION = "tenantflow.io/weka-token-uid"


def csi_plan(contract: TenantContract) -> list[PlanStep]:
    objs, ns = KubeObjects(contract.cluster), contract.namespace
    secret = objs.get("Secret", csi_secret_name(contract), ns)
    sc = objs.get("StorageClass", storage_class_name(contract))
    pvc = objs.get("PersistentVolumeClaim", contract.storage.pvc_name, ns)
    return [
        PlanStep(
            layer=LAYER,
            kind="Secret",
            name=csi_secret_name(contract),
            namespace=ns,
            action=plan_action(secret is not None),
            detail={"keys": ["endpoint", "org", "token"]},
        ),
        PlanStep(
            layer=LAYER,
            kind="StorageClass",
            name=storage_class_name(contract),
            action=plan_action(sc is not None),
            detail={"parameters": storage_class_parameters(contract), "reclaimPolicy": "Retain"},
        ),
        PlanStep(
            layer=LAYER,
            kind="PersistentVolumeClaim",
            name=contract.storage.pvc_name,
            namespace=ns,
            action=plan_action(pvc is not None),
            detail={"size": contract.storage.pvc_size},
        ),
    ]


def csi_secret_name(contract: TenantContract) -> str:
    return f"weka-{contract.slug}-creds"


def storage_class_name(contract: TenantContract) -> str:
    return f"weka-{contract.slug}"


def storage_class_parameters(contract: TenantContract) -> dict[str, str]:
    return {
        "filesystemName": filesystem_names(contract)["scratch"],
        "capacity": format_kube_quantity(parse_size(contract.storage.pvc_size)),
        "csi.storage.k8s.io/provisioner-secret-name": csi_secret_name(contract),
        "csi.storage.k8s.io/provisioner-secret-namespace": contract.namespace,
    }


def _b64(values: dict[str, str]) -> dict[str, str]:
    return {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}


def _token_description(contract: TenantContract) -> str:
    return f"{contract.slug} CSI"


def _ensure_secret(contract: TenantContract, objs: KubeObjects) -> EnsureResult:
    """The org API token lives only in the Secret: created here, written there, never returned or logged."""
    ns, name = contract.namespace, csi_secret_name(contract)
    secret = objs.get("Secret", name, ns) or {}
    recorded = secret.get("metadata", {}).get("annotations", {}).get(TOKEN_UID_ANNOTATION)
    with WekaClient.from_settings() as weka:
        org = weka.organization(contract.slug)
        if org is None:
            raise fail("NotFound", f"Weka organization {contract.slug} is missing; run storage.filesystems first")
        ours = [t for t in weka.org_tokens(org.uid) if t.description == _token_description(contract)]
        complete = {"endpoint", "org", "token"} <= set(secret.get("data", {}))
        if complete and recorded in {t.uid for t in ours}:
            return storage_result("Secret", name, Outcome.unchanged, ns, data=TokenRef(token_uid=recorded))
        token = weka.create_org_token(org.uid, _token_description(contract))
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"tenant": contract.slug},
                "annotations": {TOKEN_UID_ANNOTATION: token.uid},
            },
            "data": _b64(
                {"endpoint": settings().weka_url, "org": contract.slug, "token": token.access_token.get_secret_value()}
            ),
        }
        if not secret:
            objs.create(body)
        else:
            objs.replace(body)
        for stale in ours:
            weka.revoke_org_token(org.uid, stale.uid)
    return storage_result(
        "Secret", name, Outcome.updated if secret else Outcome.created, ns, data=TokenRef(token_uid=token.uid)
    )


def _storage_class_body(contract: TenantContract) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": storage_class_name(contract), "labels": {"tenant": contract.slug}},
        "provisioner": "csi.weka.io",
        "parameters": storage_class_parameters(contract),
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": True,
    }


def _ensure_storage_class(contract: TenantContract, objs: KubeObjects) -> EnsureResult:
    name = storage_class_name(contract)
    body = _storage_class_body(contract)
    sc = objs.get("StorageClass", name)
    if sc is None:
        objs.create(body)
        return storage_result("StorageClass", name, Outcome.created)
    actual = (
        sc.get("provisioner"),
        sc.get("parameters") or {},
        sc.get("reclaimPolicy"),
        sc.get("volumeBindingMode"),
        sc.get("allowVolumeExpansion"),
    )
    wanted = (
        body["provisioner"],
        body["parameters"],
        body["reclaimPolicy"],
        body["volumeBindingMode"],
        body["allowVolumeExpansion"],
    )
    if actual != wanted:
        raise fail(
            "Conflict",
            f"StorageClass {name} exists with other settings (StorageClass parameters are "
            f"immutable); compare it with {wanted} and delete it if it is stale",
        )
    return storage_result("StorageClass", name, Outcome.unchanged)


def _ensure_pvc(contract: TenantContract, objs: KubeObjects) -> EnsureResult:
    ns, name = contract.namespace, contract.storage.pvc_name
    size = format_kube_quantity(parse_size(contract.storage.pvc_size))
    pvc = objs.get("PersistentVolumeClaim", name, ns)
    if not pvc:
        objs.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns, "labels": {"tenant": contract.slug}},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": storage_class_name(contract),
                    "resources": {"requests": {"storage": size}},
                },
            }
        )
        return storage_result("PersistentVolumeClaim", name, Outcome.created, ns)
    spec = pvc.get("spec", {})
    if spec.get("storageClassName") != storage_class_name(contract):
        raise fail("Conflict", f"PVC {ns}/{name} exists with storageClassName {spec.get('storageClassName')}")
    current = str(spec.get("resources", {}).get("requests", {}).get("storage", "1"))
    if parse_size(current) >= parse_size(size):
        return storage_result("PersistentVolumeClaim", name, Outcome.unchanged, ns)
    objs.patch("PersistentVolumeClaim", name, ns, {"spec": {"resources": {"requests": {"storage": size}}}})
    return storage_result("PersistentVolumeClaim", name, Outcome.updated, ns, data=PvcSize(previous_size=current))


def ensure_csi_objects(contract: TenantContract) -> list[EnsureResult]:
    """Token Secret, StorageClass ``weka-<slug>`` (Retain) and the tenant PVC, in that order."""
    objs = KubeObjects(contract.cluster)
    return [_ensure_secret(contract, objs), _ensure_storage_class(contract, objs), _ensure_pvc(contract, objs)]


def undo_csi(contract: TenantContract, result: EnsureResult) -> EnsureResult:
    objs, ns = KubeObjects(contract.cluster), contract.namespace
    if result.kind == "Secret":
        with WekaClient.from_settings() as weka:
            org = weka.organization(contract.slug)
            tokens = weka.org_tokens(org.uid) if org is not None else []
            token_uid = result.data_as(TokenRef).token_uid
            stale = [
                t.uid
                for t in tokens
                if (t.uid == token_uid if token_uid else t.description == _token_description(contract))
            ]
            revoked = org is not None and any([weka.revoke_org_token(org.uid, uid) for uid in stale])
        if result.outcome is Outcome.updated:
            return result.model_copy(update={"outcome": Outcome.updated if revoked else Outcome.absent})
        found = objs.delete_if_present("Secret", result.name, ns)
        return deleted(found or revoked, result)
    if result.kind == "StorageClass":
        return deleted(objs.delete_if_present("StorageClass", result.name), result)
    if result.outcome is Outcome.updated:
        return result.model_copy(update={"outcome": Outcome.unchanged, "data": Kept(kept="PVCs cannot shrink")})
    return deleted(objs.delete_if_present("PersistentVolumeClaim", result.name, ns), result)
