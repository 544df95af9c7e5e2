"""The CSI objects of a strictly isolated tenant (runbook 6c) in csi-wekafs's documented format.

* Weka user ``csi-<short>`` with role CSI in the tenant org (its password derived, never stored but in the
  Secret): csi-wekafs logs in with a user's credentials, never with a token of ours;
* Secret ``weka-<slug>-creds`` in the tenant namespace with ``username``, ``password``, ``organization``,
  ``endpoints`` and ``scheme`` (csi-wekafs ``examples/common/csi-wekafs-api-secret.yaml``);
* StorageClass ``weka-<slug>`` (Retain), directory-backed on the tenant's scratch filesystem, with only
  csi-wekafs parameters (``examples/dynamic_directory/storageclass-wekafs-dir-api.yaml``);
* the tenant PVC, waited on until Bound; when it stays Pending the step fails naming the provisioner's event.

Ownership: every object carries tenantflow's labels and the run annotation; the Weka user's uid and each
created Kubernetes object's uid are recorded. :func:`undo_csi` removes only what it can prove this run made
(recorded uid, or the run annotation of this run) and reports everything else as left alone.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.kubeensure import foreign_owner, is_ours
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.manifests import RUN_ANNOTATION, owner_labels
from tenantflow.activities.common.polling import Backoff, heartbeat, poll_until
from tenantflow.activities.common.runs import this_run
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.weka_client import WekaClient, csi_user_credentials, org_admin_credentials
from tenantflow.activities.storage.dirs import api_secret_data
from tenantflow.activities.storage.layout import (
    LAYER,
    deleted,
    filesystem_names,
    is_teardown,
    left_alone,
    plan_action,
    recorded_uid,
    storage_result,
    tenant_session,
)
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, NoUndoData, Outcome, PvcSize, WekaObject
from tenantflow.models.tenant import TenantContract
from tenantflow.models.units import format_kube_quantity, parse_size
from tenantflow.models.weka_mount import DRIVER, REQUIRED_SECRET_KEYS, secret_parameters

CSI_ROLE = "CSI"
BIND_BUDGET_S = 120.0


def csi_secret_name(contract: TenantContract) -> str:
    return f"weka-{contract.slug}-creds"


def storage_class_name(contract: TenantContract) -> str:
    return f"weka-{contract.slug}"


def storage_class_parameters(contract: TenantContract) -> dict[str, str]:
    """Directory-backed volumes on the tenant's scratch filesystem; the size is the PVC's request."""
    return {
        "volumeType": "dir/v1",
        "filesystemName": filesystem_names(contract)["scratch"],
        "capacityEnforcement": "HARD",
        **secret_parameters(csi_secret_name(contract), contract.namespace),
    }


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
            detail={"keys": [*REQUIRED_SECRET_KEYS, "scheme"], "user": csi_user_credentials(contract.slug).username},
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


def _meta(contract: TenantContract, name: str, run_id: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": owner_labels(contract.slug),
        "annotations": {RUN_ANNOTATION: run_id} if run_id else {},
    }
    return meta | ({"namespace": namespace} if namespace else {})


def _refuse_foreign(obj: dict[str, Any], contract: TenantContract, what: str) -> None:
    if not is_ours(obj, contract.slug):
        other = foreign_owner(obj, contract.slug)
        whose = f"belongs to {other}" if other else "no tenantflow labels"
        raise fail(
            "Conflict", f"{what} exists and is not this tenant's ({whose}); remove it or pick another tenant slug"
        )


def _created(kind: str, name: str, obj: dict[str, Any], namespace: str | None = None) -> EnsureResult:
    return storage_result(
        kind, name, Outcome.created, namespace, data=WekaObject(uid=str((obj.get("metadata") or {}).get("uid") or ""))
    )


def _ensure_csi_user(contract: TenantContract) -> EnsureResult:
    """The org's CSI user, created by the org admin; an existing one must accept its derived password."""
    creds = csi_user_credentials(contract.slug)
    with WekaClient.from_settings(org_admin_credentials(contract.slug)) as org:
        user = next((u for u in org.users() if u.username == creds.username), None)
        if user is None:
            made = org.create_user(creds.username, creds.password, CSI_ROLE)
            return storage_result("WekaUser", creds.username, Outcome.created, data=WekaObject(uid=made.uid))
    try:
        with WekaClient.from_settings(creds) as csi:
            csi.login()
    except ApplicationError as err:
        if transient(err):
            raise
        raise fail(
            "Conflict",
            f"Weka user {creds.username} exists in organization {contract.slug} and does not "
            "accept this tenant's derived password; remove it or rename it",
        ) from None
    return storage_result("WekaUser", creds.username, Outcome.unchanged)


def _ensure_secret(contract: TenantContract, objs: KubeObjects, run_id: str) -> EnsureResult:
    """The CSI user's login in csi-wekafs's keys: written here, never returned or logged."""
    ns, name = contract.namespace, csi_secret_name(contract)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(contract, name, run_id, ns),
        "data": api_secret_data(csi_user_credentials(contract.slug)),
    }
    secret = objs.get("Secret", name, ns)
    if secret is None:
        return _created("Secret", name, objs.create(body), ns)
    _refuse_foreign(secret, contract, f"Secret {ns}/{name}")
    if secret.get("data") == body["data"]:
        return storage_result("Secret", name, Outcome.unchanged, ns)
    objs.replace(body | {"metadata": body["metadata"] | {"resourceVersion": secret["metadata"].get("resourceVersion")}})
    return storage_result("Secret", name, Outcome.updated, ns)


def _ensure_storage_class(contract: TenantContract, objs: KubeObjects, run_id: str) -> EnsureResult:
    name = storage_class_name(contract)
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": _meta(contract, name, run_id),
        "provisioner": DRIVER,
        "parameters": storage_class_parameters(contract),
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": True,
    }
    sc = objs.get("StorageClass", name)
    if sc is None:
        return _created("StorageClass", name, objs.create(body))
    _refuse_foreign(sc, contract, f"StorageClass {name}")
    fields = ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "allowVolumeExpansion")
    if any(sc.get(f) != body[f] for f in fields):
        raise fail(
            "Conflict",
            f"StorageClass {name} exists with other settings (StorageClass parameters are "
            f"immutable); compare it with {[body[f] for f in fields]} and delete it if it is stale",
        )
    return storage_result("StorageClass", name, Outcome.unchanged)


def _ensure_pvc(contract: TenantContract, objs: KubeObjects, run_id: str) -> EnsureResult:
    ns, name = contract.namespace, contract.storage.pvc_name
    size = format_kube_quantity(parse_size(contract.storage.pvc_size))
    pvc = objs.get("PersistentVolumeClaim", name, ns)
    if not pvc:
        return _created(
            "PersistentVolumeClaim",
            name,
            objs.create(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": _meta(contract, name, run_id, ns),
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": storage_class_name(contract),
                        "resources": {"requests": {"storage": size}},
                    },
                }
            ),
            ns,
        )
    _refuse_foreign(pvc, contract, f"PVC {ns}/{name}")
    spec = pvc.get("spec", {})
    if spec.get("storageClassName") != storage_class_name(contract):
        raise fail("Conflict", f"PVC {ns}/{name} exists with storageClassName {spec.get('storageClassName')}")
    current = str(spec.get("resources", {}).get("requests", {}).get("storage", "1"))
    if parse_size(current) >= parse_size(size):
        return storage_result("PersistentVolumeClaim", name, Outcome.unchanged, ns)
    objs.patch("PersistentVolumeClaim", name, ns, {"spec": {"resources": {"requests": {"storage": size}}}})
    return storage_result("PersistentVolumeClaim", name, Outcome.updated, ns, data=PvcSize(previous_size=current))


def pending_reason(objs: KubeObjects, contract: TenantContract) -> str:
    """The newest event on the tenant PVC (reason: message), or a note that there is none."""
    ns, name = contract.namespace, contract.storage.pvc_name
    events = [
        e
        for e in objs.list("Event", ns)
        if (e.get("involvedObject") or {}).get("name") == name
        and (e.get("involvedObject") or {}).get("kind") == "PersistentVolumeClaim"
    ]
    if not events:
        return "no event on the PVC (is the csi-wekafs controller running?)"
    last = max(events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return f"event {last.get('reason')}: {last.get('message')}"


def wait_bound(contract: TenantContract, objs: KubeObjects) -> None:
    """Poll the tenant PVC until Bound (heartbeating); fail naming the provisioner's event when it stays Pending."""
    ns, name = contract.namespace, contract.storage.pvc_name

    def phase() -> str:
        return str(((objs.get("PersistentVolumeClaim", name, ns) or {}).get("status") or {}).get("phase") or "Pending")

    polled = poll_until(
        phase,
        lambda p: p == "Bound",
        every=Backoff(settings().poll_interval_s, 1.5, 5.0),
        budget_s=BIND_BUDGET_S,
        detail=lambda p: f"PVC {ns}/{name}: {p}",
        tolerate=transient,
    )
    if not polled.done:
        raise fail(
            "PvcPending",
            f"PVC {ns}/{name} stays {polled.value} after {BIND_BUDGET_S:.0f} s: "
            f"{pending_reason(objs, contract)}; check the Secret {ns}/{csi_secret_name(contract)} "
            "(username, password, organization, endpoints) and the csi-wekafs controller logs",
        )


def ensure_csi_objects(contract: TenantContract, run_id: str = "") -> list[EnsureResult]:
    """CSI user, API Secret, StorageClass ``weka-<slug>`` (Retain) and the tenant PVC, waited on until Bound."""
    objs = KubeObjects(contract.cluster)
    results = [_ensure_csi_user(contract)]
    for ensure in (_ensure_secret, _ensure_storage_class, _ensure_pvc):
        heartbeat(f"storage.csi {ensure.__name__}")
        results.append(ensure(contract, objs, run_id))
    wait_bound(contract, objs)
    return results


def _provably_ours(obj: dict[str, Any], result: EnsureResult, slug: str) -> bool:
    """The object this run created: its recorded uid, or (nothing recorded) our labels and this run's annotation;
    in the tenant's approved teardown, our labels for this tenant."""
    meta = obj.get("metadata") or {}
    recorded = recorded_uid(result)
    if recorded:
        return meta.get("uid") == recorded
    if is_teardown():
        return is_ours(obj, slug)
    run = this_run()
    return is_ours(obj, slug) and bool(run) and (meta.get("annotations") or {}).get(RUN_ANNOTATION) == run


def _undo_user(contract: TenantContract, result: EnsureResult) -> EnsureResult:
    """By the recorded uid, else by name in the tenant org (reached only with the admin's derived password)."""
    recorded = recorded_uid(result)
    org = tenant_session(contract)
    if org is None:
        return deleted(False, result)
    with org:
        user = next((u for u in org.users() if (u.uid == recorded if recorded else u.username == result.name)), None)
        return deleted(user is not None and org.delete_user(user.uid), result)


def _release_volumes(
    objs: KubeObjects, contract: TenantContract, claim_uid: str | None, result: EnsureResult
) -> list[EnsureResult]:
    """The PersistentVolumes csi-wekafs provisioned for the tenant PVC through the tenant's StorageClass (claimRef:
    that PVC, of the uid it had when known); with reclaimPolicy Retain they outlive the PVC (also when the
    namespace went first), so their objects go here. The directory and its data stay on Weka."""
    ns, claim = contract.namespace, contract.storage.pvc_name
    done = []
    for pv in objs.list("PersistentVolume"):
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef") or {}
        ours = (
            ref.get("namespace"),
            ref.get("name"),
            (spec.get("csi") or {}).get("driver"),
            spec.get("storageClassName"),
        ) == (ns, claim, DRIVER, storage_class_name(contract))
        if ours and (claim_uid is None or ref.get("uid") == claim_uid):
            name = str(pv["metadata"]["name"])
            gone = result.model_copy(
                update={
                    "kind": "PersistentVolume",
                    "name": name,
                    "namespace": None,
                    "outcome": Outcome.created,
                    "data": NoUndoData(),
                }
            )
            done.append(deleted(objs.delete("PersistentVolume", name), gone))
    return done


def undo_csi(contract: TenantContract, result: EnsureResult) -> list[EnsureResult]:
    """Remove what this run provably created (with the PVC, the volumes bound to it); a grown PVC and a
    rewritten Secret stay (reported)."""
    objs, ns = KubeObjects(contract.cluster), contract.namespace
    if result.kind == "WekaUser":
        return [_undo_user(contract, result)]
    if result.outcome is Outcome.updated:
        why = "PVCs cannot shrink" if result.kind == "PersistentVolumeClaim" else "the earlier content is not kept"
        return [left_alone(result, why)]
    namespace = None if result.kind == "StorageClass" else ns
    obj = objs.get(result.kind, result.name, namespace)
    if obj is not None and not _provably_ours(obj, result, contract.slug):
        return [left_alone(result, "not provably made by this run (uid or run annotation differ)")]
    uid = str(((obj or {}).get("metadata") or {}).get("uid") or "") or None  # the one read: preconditions.uid
    done = [deleted(obj is not None and objs.delete(result.kind, result.name, namespace, uid=uid), result)]
    if result.kind != "PersistentVolumeClaim":
        return done
    claim_uid = str((obj or {}).get("metadata", {}).get("uid") or "") or recorded_uid(result)
    return done + _release_volumes(objs, contract, claim_uid, result)
