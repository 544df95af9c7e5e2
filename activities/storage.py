"""Storage layer (runbook steps 4e and 6): Weka org, filesystems, directories and quotas, and the CSI objects.

Strict isolation (6a): organization ``<slug>`` with admin ``admin-<short>`` (password derived, see
:func:`activities.weka_client.org_admin_credentials`), filesystems ``<slug>-home`` and ``<slug>-scratch``,
and an org API token that goes only into Secret ``weka-<slug>-creds`` in the tenant namespace, followed by
StorageClass ``weka-<slug>`` and the PVC (6c). Shared org (6b): directories in the shared ``home`` and
``scratch`` filesystems. Either way ``/home/<user>`` (``/<user>`` on the home filesystem) and
``/scratch/<slug>`` (``/<slug>`` on the scratch filesystem) get the contract's hard/soft quotas (4e).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities import kubeclient
from tenantflow.activities.errors import TRANSIENT, fail
from tenantflow.activities.settings import settings
from tenantflow.activities.weka_client import Credentials, Filesystem, Quota, WekaClient, org_admin_credentials
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome, Severity
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import StorageIsolation, TenantContract
from tenantflow.models.units import format_kube_quantity, parse_size

LAYER = "storage"
BUFFER = 1.2
TOKEN_UID_ANNOTATION = "tenantflow.io/weka-token-uid"


@dataclass(frozen=True)
class QuotaTarget:
    role: str
    filesystem: str
    path: str
    label: str
    hard: int
    soft: int


def _strict(contract: TenantContract) -> bool:
    return contract.storage.isolation is StorageIsolation.strict_org


def filesystem_names(contract: TenantContract) -> dict[str, str]:
    if _strict(contract):
        return {"home": f"{contract.slug}-home", "scratch": f"{contract.slug}-scratch"}
    return {"home": "home", "scratch": "scratch"}


def filesystem_capacities(contract: TenantContract) -> dict[str, int]:
    return {"home": parse_size(contract.storage.home_filesystem_capacity),
            "scratch": parse_size(contract.storage.scratch.hard)}


def quota_targets(contract: TenantContract) -> list[QuotaTarget]:
    names, home, scratch = filesystem_names(contract), contract.storage.home_per_user, contract.storage.scratch
    targets = [QuotaTarget("home", names["home"], f"/{u}", f"/home/{u}", parse_size(home.hard),
                           parse_size(home.soft)) for u in contract.usernames]
    targets.append(QuotaTarget("scratch", names["scratch"], f"/{contract.slug}", f"/scratch/{contract.slug}",
                               parse_size(scratch.hard), parse_size(scratch.soft)))
    return targets


def tenant_credentials(contract: TenantContract) -> Credentials | None:
    """Who owns the tenant's filesystems: the org admin (strict) or the platform user (shared)."""
    return org_admin_credentials(contract.slug) if _strict(contract) else None


def _tenant_session(contract: TenantContract) -> WekaClient | None:
    """A logged-in session owning the tenant's filesystems; None when the tenant org is already gone."""
    weka = WekaClient.from_settings(tenant_credentials(contract))
    try:
        weka.login()
    except ApplicationError as err:
        weka.close()
        if err.type == "Forbidden":
            return None
        raise
    return weka


def _plain(contract: TenantContract, obj: object) -> dict[str, Any]:
    """A kubernetes model as its JSON dict ({} for None)."""
    if obj is None:
        return {}
    plain: dict[str, Any] = kubeclient.api_client(contract.cluster).sanitize_for_serialization(obj)
    return plain


def _result(kind: str, name: str, outcome: Outcome, namespace: str | None = None, **data: Any) -> EnsureResult:
    return EnsureResult(layer=LAYER, kind=kind, name=name, namespace=namespace, outcome=outcome, data=data)


# -- preflight and plan --------------------------------------------------------------------------

def _org_is_ours(contract: TenantContract) -> bool:
    try:
        with WekaClient.from_settings(org_admin_credentials(contract.slug)) as org:
            org.login()
    except ApplicationError as err:
        if err.type == TRANSIENT:
            raise
        return False
    return True


def _weka_findings(weka: WekaClient, contract: TenantContract) -> list[Finding]:
    findings: list[Finding] = []
    needed = contract.storage.requested_bytes
    if _strict(contract) and weka.organization(contract.slug) is not None:
        if not _org_is_ours(contract):
            findings.append(Finding(check="storage.org", ok=False,
                                    message=f"Weka organization {contract.slug} exists and is not this tenant's",
                                    fix=f"remove or rename the Weka organization {contract.slug}"))
            return findings
        with WekaClient.from_settings(org_admin_credentials(contract.slug)) as org:
            needed -= sum(f.total_budget for f in org.filesystems()
                          if f.name in filesystem_names(contract).values())
    if not _strict(contract):
        missing = [n for n in filesystem_names(contract).values() if weka.filesystem(n) is None]
        if missing:
            findings.append(Finding(check="storage.shared_filesystems", ok=False,
                                    message=f"shared Weka filesystems missing: {', '.join(missing)}",
                                    fix="create the shared home and scratch filesystems in the platform org"))
    free = weka.cluster().capacity.unprovisioned_bytes
    required = math.ceil(max(needed, 0) * BUFFER)
    ok = free >= required
    findings.append(Finding(
        check="storage.capacity", ok=ok, severity=Severity.info if ok else Severity.error,
        message=(f"Weka has {free} bytes free; the tenant needs {required} bytes "
                 f"({max(needed, 0)} requested + 20%)"),
        fix="" if ok else (f"free at least {required - free} bytes on Weka, or lower "
                           "storage.home_filesystem_capacity / storage.scratch.hard in the contract")))
    return findings


@activity.defn(name="storage.preflight")
def preflight(inp: StepInput) -> StepResult:
    """Weka login works, free capacity >= requested + 20%, the org name is free or ours (read-only)."""
    try:
        with WekaClient.from_settings() as weka:
            findings = _weka_findings(weka, inp.contract)
    except ApplicationError as err:
        if err.type == TRANSIENT:
            raise
        findings = [Finding(check="storage.weka", ok=False, message=f"Weka API is not usable: {err}",
                            fix="check WEKA_URL and the platform user's credentials (ClusterAdmin of Root)")]
    return StepResult(facts=inp.facts, findings=findings)


def _action(exists: bool, same: bool = True) -> Action:
    return Action.create if not exists else (Action.unchanged if same else Action.update)


@activity.defn(name="storage.plan")
def plan(inp: StepInput) -> list[PlanStep]:
    """Org, filesystems, directories and quotas (and for strict isolation the CSI objects)."""
    contract = inp.contract
    steps: list[PlanStep] = []
    with WekaClient.from_settings() as weka:
        org_exists = _strict(contract) and weka.organization(contract.slug) is not None
        if _strict(contract):
            steps.append(PlanStep(layer=LAYER, kind="WekaOrganization", name=contract.slug,
                                  action=_action(org_exists), detail={"admin": f"admin-{contract.short}"}))
    filesystems: dict[str, Filesystem] = {}
    quotas: dict[str, dict[int, Any]] = {}
    if org_exists or not _strict(contract):
        with WekaClient.from_settings(tenant_credentials(contract)) as tenant:
            filesystems = {f.name: f for f in tenant.filesystems()}
            quotas = {f.uid: tenant.quotas(f.uid) for f in filesystems.values()}
            paths = {t.label: tenant.resolve_path(filesystems[t.filesystem].uid, t.path)
                     for t in quota_targets(contract) if t.filesystem in filesystems}
    else:
        paths = {}
    if _strict(contract):
        for role, name in filesystem_names(contract).items():
            steps.append(PlanStep(layer=LAYER, kind="WekaFilesystem", name=name, action=_action(name in filesystems),
                                  detail={"capacity_bytes": filesystem_capacities(contract)[role]}))
    for target in quota_targets(contract):
        inode = paths.get(target.label)
        fs = filesystems.get(target.filesystem)
        current = quotas.get(fs.uid, {}).get(inode) if fs and inode is not None else None
        same = current is not None and (current.hard_limit_bytes, current.soft_limit_bytes) == (target.hard,
                                                                                                target.soft)
        steps.append(PlanStep(layer=LAYER, kind="WekaQuota", name=target.label,
                              action=_action(current is not None, same),
                              detail={"filesystem": target.filesystem, "hard_bytes": target.hard,
                                      "soft_bytes": target.soft}))
    if _strict(contract):
        steps.extend(_csi_plan(contract))
    return steps


def _csi_plan(contract: TenantContract) -> list[PlanStep]:
    target, ns = contract.cluster, contract.namespace
    core, storage = client.CoreV1Api(kubeclient.api_client(target)), client.StorageV1Api(kubeclient.api_client(target))
    secret = kubeclient.get_or_none(target, core.read_namespaced_secret, csi_secret_name(contract), ns)
    sc = kubeclient.get_or_none(target, storage.read_storage_class, storage_class_name(contract))
    pvc = kubeclient.get_or_none(target, core.read_namespaced_persistent_volume_claim,
                                 contract.storage.pvc_name, ns)
    return [
        PlanStep(layer=LAYER, kind="Secret", name=csi_secret_name(contract), namespace=ns,
                 action=_action(secret is not None), detail={"keys": ["endpoint", "org", "token"]}),
        PlanStep(layer=LAYER, kind="StorageClass", name=storage_class_name(contract), action=_action(sc is not None),
                 detail={"parameters": storage_class_parameters(contract), "reclaimPolicy": "Retain"}),
        PlanStep(layer=LAYER, kind="PersistentVolumeClaim", name=contract.storage.pvc_name, namespace=ns,
                 action=_action(pvc is not None), detail={"size": contract.storage.pvc_size}),
    ]


# -- filesystems and directories -----------------------------------------------------------------

def _ensure_directories(weka: WekaClient, contract: TenantContract,
                        filesystems: dict[str, Filesystem]) -> list[EnsureResult]:
    results = []
    for target in quota_targets(contract):
        fs = filesystems[target.role]
        exists = weka.resolve_path(fs.uid, target.path) is not None
        if not exists:
            weka.make_directory(fs.name, target.path)
        results.append(_result("WekaDirectory", target.label, Outcome.unchanged if exists else Outcome.created,
                               filesystem=fs.name, path=target.path))
    return results


@activity.defn(name="storage.filesystems")
def ensure_filesystems(inp: StepInput) -> StepResult:
    """Strict: org + admin + ``<slug>-home``/``<slug>-scratch``. Shared: the shared filesystems. Then the
    per-user home and per-tenant scratch directories."""
    contract = inp.contract
    results: list[EnsureResult] = []
    org_uid: str | None = None
    if _strict(contract):
        with WekaClient.from_settings() as weka:
            org = weka.organization(contract.slug)
            if org is None:
                org = weka.create_organization(contract.slug, org_admin_credentials(contract.slug))
                results.append(_result("WekaOrganization", contract.slug, Outcome.created, uid=org.uid))
            elif not _org_is_ours(contract):
                raise fail("Conflict", f"Weka organization {contract.slug} exists and is not this tenant's")
            else:
                results.append(_result("WekaOrganization", contract.slug, Outcome.unchanged, uid=org.uid))
            org_uid = org.uid
    filesystems: dict[str, Filesystem] = {}
    with WekaClient.from_settings(tenant_credentials(contract)) as tenant:
        existing = {f.name: f for f in tenant.filesystems()}
        for role, name in filesystem_names(contract).items():
            fs = existing.get(name)
            if fs is None and not _strict(contract):
                raise fail("NotFound", f"shared Weka filesystem {name} does not exist")
            if fs is None:
                fs = tenant.create_filesystem(name, filesystem_capacities(contract)[role])
                results.append(_result("WekaFilesystem", name, Outcome.created, uid=fs.uid))
            elif _strict(contract):
                results.append(_result("WekaFilesystem", name, Outcome.unchanged, uid=fs.uid))
            filesystems[role] = fs
        results.extend(_ensure_directories(tenant, contract, filesystems))
    facts = inp.facts.model_copy(update={"weka_org_uid": org_uid,
                                         "weka_filesystems": {r: f.uid for r, f in filesystems.items()}})
    activity.logger.info("storage.filesystems %s: %s", contract.slug,
                         ", ".join(f"{r.kind}/{r.name}={r.outcome.value}" for r in results))
    return StepResult(results=results, facts=facts)


# -- quotas --------------------------------------------------------------------------------------

@activity.defn(name="storage.quotas")
def ensure_quotas(inp: StepInput) -> StepResult:
    """Hard/soft quota on every ``/home/<user>`` and on ``/scratch/<slug>``; compare before writing."""
    contract = inp.contract
    results: list[EnsureResult] = []
    with WekaClient.from_settings(tenant_credentials(contract)) as weka:
        filesystems = {f.name: f for f in weka.filesystems()}
        current_quotas = {f.uid: weka.quotas(f.uid) for f in filesystems.values()
                          if f.name in filesystem_names(contract).values()}
        for target in quota_targets(contract):
            fs = filesystems.get(target.filesystem)
            inode = weka.resolve_path(fs.uid, target.path) if fs else None
            if fs is None or inode is None:
                raise fail("NotFound", f"{target.label} ({target.path} on Weka filesystem {target.filesystem}) "
                           "does not exist; run storage.filesystems first")
            current = current_quotas[fs.uid].get(inode)
            data: dict[str, Any] = {"filesystem_uid": fs.uid, "inode_id": inode, "path": target.path}
            if current is not None and (current.hard_limit_bytes, current.soft_limit_bytes) == (target.hard,
                                                                                                 target.soft):
                results.append(_result("WekaQuota", target.label, Outcome.unchanged, **data))
                continue
            weka.set_quota(fs.uid, inode, target.path, target.hard, target.soft)
            if current is None:
                results.append(_result("WekaQuota", target.label, Outcome.created, **data))
            else:
                results.append(_result("WekaQuota", target.label, Outcome.updated, previous={
                    "hard": current.hard_limit_bytes, "soft": current.soft_limit_bytes}, **data))
    return StepResult(results=results, facts=inp.facts)


# -- CSI: token Secret, StorageClass, PVC --------------------------------------------------------

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


def _ensure_secret(contract: TenantContract, core: client.CoreV1Api) -> EnsureResult:
    """The org API token lives only in the Secret: created here, written there, never returned or logged."""
    target, ns, name = contract.cluster, contract.namespace, csi_secret_name(contract)
    secret = _plain(contract, kubeclient.get_or_none(target, core.read_namespaced_secret, name, ns))
    recorded = secret.get("metadata", {}).get("annotations", {}).get(TOKEN_UID_ANNOTATION)
    with WekaClient.from_settings() as weka:
        org = weka.organization(contract.slug)
        if org is None:
            raise fail("NotFound", f"Weka organization {contract.slug} is missing; run storage.filesystems first")
        ours = [t for t in weka.org_tokens(org.uid) if t.description == _token_description(contract)]
        complete = {"endpoint", "org", "token"} <= set(secret.get("data", {}))
        if complete and recorded in {t.uid for t in ours}:
            return _result("Secret", name, Outcome.unchanged, ns, token_uid=recorded)
        token = weka.create_org_token(org.uid, _token_description(contract))
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": name, "namespace": ns, "labels": {"tenant": contract.slug},
                             "annotations": {TOKEN_UID_ANNOTATION: token.uid}},
                "data": _b64({"endpoint": settings().weka_url, "org": contract.slug,
                              "token": token.access_token.get_secret_value()})}
        if not secret:
            kubeclient.call(target, core.create_namespaced_secret, ns, body)
        else:
            kubeclient.call(target, core.replace_namespaced_secret, name, ns, body)
        for stale in ours:
            weka.revoke_org_token(org.uid, stale.uid)
    return _result("Secret", name, Outcome.updated if secret else Outcome.created, ns,
                   token_uid=token.uid)


def _storage_class_body(contract: TenantContract) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": storage_class_name(contract), "labels": {"tenant": contract.slug}},
            "provisioner": "csi.weka.io", "parameters": storage_class_parameters(contract),
            "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate", "allowVolumeExpansion": True}


def _ensure_storage_class(contract: TenantContract, storage: client.StorageV1Api) -> EnsureResult:
    target, name = contract.cluster, storage_class_name(contract)
    body = _storage_class_body(contract)
    sc = kubeclient.get_or_none(target, storage.read_storage_class, name)
    if sc is None:
        kubeclient.call(target, storage.create_storage_class, body)
        return _result("StorageClass", name, Outcome.created)
    actual = (sc.provisioner, sc.parameters or {}, sc.reclaim_policy, sc.volume_binding_mode,
              sc.allow_volume_expansion)
    wanted = (body["provisioner"], body["parameters"], body["reclaimPolicy"], body["volumeBindingMode"],
              body["allowVolumeExpansion"])
    if actual != wanted:
        raise fail("Conflict", f"StorageClass {name} exists with other settings (StorageClass parameters are "
                   f"immutable); compare it with {wanted} and delete it if it is stale")
    return _result("StorageClass", name, Outcome.unchanged)


def _ensure_pvc(contract: TenantContract, core: client.CoreV1Api) -> EnsureResult:
    target, ns, name = contract.cluster, contract.namespace, contract.storage.pvc_name
    size = format_kube_quantity(parse_size(contract.storage.pvc_size))
    pvc = _plain(contract, kubeclient.get_or_none(target, core.read_namespaced_persistent_volume_claim, name, ns))
    if not pvc:
        kubeclient.call(target, core.create_namespaced_persistent_volume_claim, ns, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "labels": {"tenant": contract.slug}},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class_name(contract),
                     "resources": {"requests": {"storage": size}}}})
        return _result("PersistentVolumeClaim", name, Outcome.created, ns)
    spec = pvc.get("spec", {})
    if spec.get("storageClassName") != storage_class_name(contract):
        raise fail("Conflict", f"PVC {ns}/{name} exists with storageClassName {spec.get('storageClassName')}")
    current = str(spec.get("resources", {}).get("requests", {}).get("storage", "1"))
    if parse_size(current) >= parse_size(size):
        return _result("PersistentVolumeClaim", name, Outcome.unchanged, ns)
    kubeclient.call(target, core.patch_namespaced_persistent_volume_claim, name, ns,
                    {"spec": {"resources": {"requests": {"storage": size}}}})
    return _result("PersistentVolumeClaim", name, Outcome.updated, ns, previous_size=current)


@activity.defn(name="storage.csi")
def ensure_csi(inp: StepInput) -> StepResult:
    """Strict isolation: token Secret, StorageClass ``weka-<slug>`` (Retain) and the tenant PVC."""
    contract = inp.contract
    if not _strict(contract):
        return StepResult(facts=inp.facts)
    api = kubeclient.api_client(contract.cluster)
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    results = [_ensure_secret(contract, core), _ensure_storage_class(contract, storage),
               _ensure_pvc(contract, core)]
    activity.logger.info("storage.csi %s: %s", contract.slug,
                         ", ".join(f"{r.kind}/{r.name}={r.outcome.value}" for r in results))
    return StepResult(results=results, facts=inp.facts.model_copy(update={"csi_secret": csi_secret_name(contract)}))


# -- undo ----------------------------------------------------------------------------------------

def _deleted(found: bool, result: EnsureResult) -> EnsureResult:
    return result.model_copy(update={"outcome": Outcome.deleted if found else Outcome.absent})


def _delete_if_present(target: KubeTarget, read: Callable[..., object], delete: Callable[..., object],
                       *args: str) -> bool:
    """Read first, so an undo that finds nothing makes no write."""
    if kubeclient.get_or_none(target, read, *args) is None:
        return False
    kubeclient.get_or_none(target, delete, *args)
    return True


def _undo_csi(contract: TenantContract, result: EnsureResult) -> EnsureResult:
    target, ns = contract.cluster, contract.namespace
    api = kubeclient.api_client(target)
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    if result.kind == "Secret":
        with WekaClient.from_settings() as weka:
            org = weka.organization(contract.slug)
            tokens = weka.org_tokens(org.uid) if org is not None else []
            token_uid = result.data.get("token_uid")
            stale = [t.uid for t in tokens if (t.uid == token_uid if token_uid
                                               else t.description == _token_description(contract))]
            revoked = org is not None and any([weka.revoke_org_token(org.uid, uid) for uid in stale])
        if result.outcome is Outcome.updated:
            return result.model_copy(update={"outcome": Outcome.updated if revoked else Outcome.absent})
        found = _delete_if_present(target, core.read_namespaced_secret, core.delete_namespaced_secret,
                                   result.name, ns)
        return _deleted(found or revoked, result)
    if result.kind == "StorageClass":
        return _deleted(_delete_if_present(target, storage.read_storage_class, storage.delete_storage_class,
                                           result.name), result)
    if result.outcome is Outcome.updated:
        return result.model_copy(update={"outcome": Outcome.unchanged, "data": {"kept": "PVCs cannot shrink"}})
    return _deleted(_delete_if_present(target, core.read_namespaced_persistent_volume_claim,
                                       core.delete_namespaced_persistent_volume_claim, result.name, ns), result)


def _locate_quota(weka: WekaClient, contract: TenantContract, result: EnsureResult) -> EnsureResult | None:
    """A quota result with its filesystem uid and inode (looked up by label when the step never returned)."""
    if "inode_id" in result.data:
        return result
    target = next((t for t in quota_targets(contract) if t.label == result.name), None)
    fs = next((f for f in weka.filesystems() if target and f.name == target.filesystem), None)
    inode = weka.resolve_path(fs.uid, target.path) if fs and target else None
    if fs is None or target is None or inode is None:
        return None
    return result.model_copy(update={"data": {"filesystem_uid": fs.uid, "inode_id": inode, "path": target.path}})


def _undo_quota(weka: WekaClient, present: dict[str, dict[int, Quota]], result: EnsureResult) -> EnsureResult:
    fs_uid, inode = str(result.data["filesystem_uid"]), int(result.data["inode_id"])
    current = present.get(fs_uid, {}).get(inode)
    if result.outcome is Outcome.created:
        return _deleted(current is not None and weka.delete_quota(fs_uid, inode), result)
    previous = result.data["previous"]
    if fs_uid not in present or (current is not None and (current.hard_limit_bytes, current.soft_limit_bytes) == (
            int(previous["hard"]), int(previous["soft"]))):
        return result.model_copy(update={"outcome": Outcome.absent})
    weka.set_quota(fs_uid, inode, str(result.data["path"]), int(previous["hard"]), int(previous["soft"]))
    return result.model_copy(update={"outcome": Outcome.updated})


def _undo_filesystems(contract: TenantContract, results: list[EnsureResult]) -> list[EnsureResult]:
    undone: list[EnsureResult] = []
    created = [r for r in results if r.outcome is Outcome.created]
    fs_results = [r for r in created if r.kind == "WekaFilesystem"]
    org_results = [r for r in created if r.kind == "WekaOrganization"]
    undone.extend(r.model_copy(update={"outcome": Outcome.unchanged, "data": {
        "kept": "Weka's REST API cannot remove directories"}}) for r in created if r.kind == "WekaDirectory")
    tenant = _tenant_session(contract) if fs_results else None
    if tenant is None:
        undone.extend(_deleted(False, r) for r in fs_results)
    else:
        with tenant:
            by_name = {f.name: f.uid for f in tenant.filesystems()}
            present = set(by_name.values())
            for r in reversed(fs_results):
                uid = str(r.data.get("uid") or by_name.get(r.name, ""))
                if uid in present:
                    tenant.delete_filesystem(uid)
                undone.append(_deleted(uid in present, r))
    with WekaClient.from_settings() as weka:
        for r in org_results:
            org = weka.organization(contract.slug)
            ours = org is not None and org.uid == r.data.get("uid", org.uid)
            if org is not None and ours:
                weka.delete_organization(org.uid)
            undone.append(_deleted(ours, r))
    return undone


@activity.defn(name="storage.undo")
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Compensate one storage step: only what that step created (or restore what it updated)."""
    contract = inp.contract
    changed = [r for r in inp.results if r.outcome in (Outcome.created, Outcome.updated)]
    if inp.step == "csi":
        return [_undo_csi(contract, r) for r in reversed(changed)]
    if inp.step == "quotas":
        weka = _tenant_session(contract) if changed else None
        if weka is None:
            return [_deleted(False, r) for r in changed]
        with weka:
            present = {f.uid: weka.quotas(f.uid) for f in weka.filesystems()}
            located = [(r, _locate_quota(weka, contract, r)) for r in changed]
            return [_undo_quota(weka, present, found) if found else _deleted(False, r) for r, found in located]
    if inp.step == "filesystems":
        return _undo_filesystems(contract, changed)
    return []


ACTIVITIES = [preflight, plan, ensure_filesystems, ensure_quotas, ensure_csi, undo]
