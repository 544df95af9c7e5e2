"""Storage layer (runbook steps 4e and 6): Weka org, filesystems, directories and quotas, and the CSI objects.

Strict isolation (6a): organization ``<slug>`` with admin ``admin-<short>`` (password derived, see
:func:`activities.common.weka_client.org_admin_credentials`), filesystems ``<slug>-home`` and ``<slug>-scratch``,
and an org API token that goes only into Secret ``weka-<slug>-creds`` in the tenant namespace, followed by
StorageClass ``weka-<slug>`` and the PVC (6c). Shared org (6b): directories in the shared ``home`` and
``scratch`` filesystems. Either way ``/home/<user>`` (``/<user>`` on the home filesystem) and
``/scratch/<slug>`` (``/<slug>`` on the scratch filesystem) get the contract's hard/soft quotas (4e).

Directories are made on a csi-wekafs mount by a Job (:mod:`activities.storage.dirs`), owned by the user
(home, 0700) or root and the tenant group (scratch, 2770); the owner of existing ones the tenant covers is checked
and corrected (:mod:`activities.storage.owners`); quotas are set by inode (``resolvePath``) with
the marker :func:`quota_owner` in the quota's ``owner`` field. Ownership: created Weka objects record their
uid; undo deletes only what carries the recorded uid (or, for quotas, the marker on the recorded inode) and
reports the rest as left alone. A rollback never removes a directory (another tenant may share the filesystem)
and puts a corrected owner back; in the shared org the plan lists the tenant's directories, and an offboarding
whose purge was confirmed removes those (:mod:`activities.storage.owners`).
Per-user requests go a few at a time (:mod:`activities.common.fanout`), heartbeating.
"""

from __future__ import annotations

import math
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.fanout import fan_out
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.weka_client import Filesystem, Quota, WekaClient, org_admin_credentials
from tenantflow.activities.storage.csi import csi_plan, csi_secret_name, ensure_csi_objects, undo_csi
from tenantflow.activities.storage.layout import (
    LAYER,
    QuotaTarget,
    deleted,
    filesystem_capacities,
    filesystem_names,
    is_strict,
    org_is_ours,
    plan_action,
    quota_targets,
    resolve_targets,
    storage_result,
    tenant_credentials,
    tenant_session,
)
from tenantflow.activities.storage.owners import directory_plan, ensure_directories
from tenantflow.activities.storage.undo import locate_quota, quota_owner, undo_filesystems, undo_quota
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import (
    EnsureResult,
    Finding,
    Outcome,
    QuotaLimits,
    Severity,
    WekaObject,
    WekaQuota,
)
from tenantflow.models.tenant import TenantContract

BUFFER = 1.2


# -- preflight and plan --------------------------------------------------------------------------


def _weka_findings(weka: WekaClient, contract: TenantContract) -> list[Finding]:
    findings: list[Finding] = []
    needed = contract.storage.requested_bytes
    if is_strict(contract) and weka.organization(contract.slug) is not None:
        if not org_is_ours(contract):
            findings.append(
                Finding.failed(
                    check="storage.org",
                    message=f"Weka organization {contract.slug} exists and is not this tenant's",
                    fix=f"remove or rename the Weka organization {contract.slug}",
                )
            )
            return findings
        with WekaClient.from_settings(org_admin_credentials(contract.slug)) as org:
            needed -= sum(f.total_budget for f in org.filesystems() if f.name in filesystem_names(contract).values())
    if not is_strict(contract):
        missing = [n for n in filesystem_names(contract).values() if weka.filesystem(n) is None]
        if missing:
            findings.append(
                Finding.failed(
                    check="storage.shared_filesystems",
                    message=f"shared Weka filesystems missing: {', '.join(missing)}",
                    fix="create the shared home and scratch filesystems in the platform org",
                )
            )
    free = weka.cluster().capacity.unprovisioned_bytes
    required = math.ceil(max(needed, 0) * BUFFER)
    ok = free >= required
    findings.append(
        Finding(
            check="storage.capacity",
            ok=ok,
            severity=Severity.info if ok else Severity.error,
            message=(
                f"Weka has {free} bytes free; the tenant needs {required} bytes ({max(needed, 0)} requested + 20%)"
            ),
            fix=""
            if ok
            else (
                f"free at least {required - free} bytes on Weka, or lower "
                "storage.home_filesystem_capacity / storage.scratch.hard in the contract"
            ),
        )
    )
    return findings


@defn(runbook.STORAGE.preflight)
def preflight(inp: StepInput) -> StepResult:
    """Weka login works, free capacity >= requested + 20%, the org name is free or ours (read-only)."""
    try:
        with WekaClient.from_settings() as weka:
            findings = _weka_findings(weka, inp.contract)
    except ApplicationError as err:
        if transient(err):
            raise
        findings = [
            Finding.failed(
                check="storage.weka",
                message=f"Weka API is not usable: {err}",
                fix="check WEKA_URL and the platform user's credentials (ClusterAdmin of Root)",
            )
        ]
    return StepResult(facts=inp.facts, findings=findings)


@defn(runbook.STORAGE.plan)
def plan(inp: StepInput) -> list[PlanStep]:
    """Org, filesystems, directories and quotas (and for strict isolation the CSI objects)."""
    contract = inp.contract
    steps: list[PlanStep] = []
    with WekaClient.from_settings() as weka:
        org_exists = is_strict(contract) and weka.organization(contract.slug) is not None
        if is_strict(contract):
            steps.append(
                PlanStep(
                    layer=LAYER,
                    kind="WekaOrganization",
                    name=contract.slug,
                    action=plan_action(org_exists),
                    detail={"admin": f"admin-{contract.short}"},
                )
            )
    filesystems: dict[str, Filesystem] = {}
    quotas: dict[str, dict[int, Any]] = {}
    if org_exists or not is_strict(contract):
        with WekaClient.from_settings(tenant_credentials(contract)) as tenant:
            filesystems = {f.name: f for f in tenant.filesystems()}
            quotas = {f.uid: tenant.quotas(f.uid) for f in filesystems.values()}
            paths = resolve_targets(
                tenant, quota_targets(contract), {f.name: f.uid for f in filesystems.values()}, "plan"
            )
    else:
        paths = {}
    if is_strict(contract):
        for role, name in filesystem_names(contract).items():
            steps.append(
                PlanStep(
                    layer=LAYER,
                    kind="WekaFilesystem",
                    name=name,
                    action=plan_action(name in filesystems),
                    detail={"capacity_bytes": filesystem_capacities(contract)[role]},
                )
            )
    for target in quota_targets(contract):
        inode = paths.get(target.label)
        fs = filesystems.get(target.filesystem)
        current = quotas.get(fs.uid, {}).get(inode) if fs and inode is not None else None
        same = current is not None and (current.hard_limit_bytes, current.soft_limit_bytes) == (
            target.hard,
            target.soft,
        )
        steps.append(
            PlanStep(
                layer=LAYER,
                kind="WekaQuota",
                name=target.label,
                action=plan_action(current is not None, same),
                detail={"filesystem": target.filesystem, "hard_bytes": target.hard, "soft_bytes": target.soft},
            )
        )
    if is_strict(contract):
        steps.extend(csi_plan(contract))
    else:
        steps[:0] = directory_plan(contract, paths)
    return steps


# -- filesystems and directories -----------------------------------------------------------------


@defn(runbook.STORAGE_FILESYSTEMS)
def ensure_filesystems(inp: StepInput) -> StepResult:
    """Strict: org + admin + ``<slug>-home``/``<slug>-scratch``. Shared: the shared filesystems. Then the
    per-user home and per-tenant scratch directories."""
    contract = inp.contract
    results: list[EnsureResult] = []
    org_uid: str | None = None
    if is_strict(contract):
        with WekaClient.from_settings() as weka:
            org = weka.organization(contract.slug)
            if org is None:
                org = weka.create_organization(contract.slug, org_admin_credentials(contract.slug))
                results.append(
                    storage_result("WekaOrganization", contract.slug, Outcome.created, data=WekaObject(uid=org.uid))
                )
            elif not org_is_ours(contract):
                raise fail("Conflict", f"Weka organization {contract.slug} exists and is not this tenant's")
            else:
                results.append(storage_result("WekaOrganization", contract.slug, Outcome.unchanged))
            org_uid = org.uid
    filesystems: dict[str, Filesystem] = {}
    with WekaClient.from_settings(tenant_credentials(contract)) as tenant:
        existing = {f.name: f for f in tenant.filesystems()}
        for role, name in filesystem_names(contract).items():
            fs = existing.get(name)
            if fs is None and not is_strict(contract):
                raise fail("NotFound", f"shared Weka filesystem {name} does not exist")
            if fs is None:
                fs = tenant.create_filesystem(name, filesystem_capacities(contract)[role])
                results.append(storage_result("WekaFilesystem", name, Outcome.created, data=WekaObject(uid=fs.uid)))
            elif is_strict(contract):
                results.append(storage_result("WekaFilesystem", name, Outcome.unchanged))
            filesystems[role] = fs
        results.extend(ensure_directories(tenant, contract, inp.facts, filesystems))
    facts = inp.facts.model_copy(
        update={"weka_org_uid": org_uid, "weka_filesystems": {r: f.uid for r, f in filesystems.items()}}
    )
    activity.logger.info(
        "storage.filesystems %s: %s", contract.slug, ", ".join(f"{r.kind}/{r.name}={r.outcome.value}" for r in results)
    )
    return StepResult(results=results, facts=facts)


# -- quotas --------------------------------------------------------------------------------------


def _ensure_quota(
    weka: WekaClient, contract: TenantContract, target: QuotaTarget, current: Quota | None, fs_uid: str, inode: int
) -> EnsureResult:
    """One directory's quota: left alone when the limits match, else set (created, or updated from ``current``)."""
    data = WekaQuota(filesystem_uid=fs_uid, inode_id=inode, path=target.path)
    if current is not None and (current.hard_limit_bytes, current.soft_limit_bytes) == (target.hard, target.soft):
        return storage_result("WekaQuota", target.label, Outcome.unchanged, data=data)
    owner = quota_owner(contract) if current is None else current.owner
    weka.set_quota(fs_uid, inode, target.path, target.hard, target.soft, owner)
    if current is None:
        return storage_result("WekaQuota", target.label, Outcome.created, data=data)
    previous = QuotaLimits(hard=current.hard_limit_bytes, soft=current.soft_limit_bytes)
    return storage_result(
        "WekaQuota", target.label, Outcome.updated, data=data.model_copy(update={"previous": previous})
    )


@defn(runbook.STORAGE_QUOTAS)
def ensure_quotas(inp: StepInput) -> StepResult:
    """Hard/soft quota on every ``/home/<user>`` and on ``/scratch/<slug>``; compare before writing."""
    contract = inp.contract
    with WekaClient.from_settings(tenant_credentials(contract)) as weka:
        filesystems = {f.name: f for f in weka.filesystems()}
        current_quotas = {
            f.uid: weka.quotas(f.uid) for f in filesystems.values() if f.name in filesystem_names(contract).values()
        }
        targets = quota_targets(contract)
        inodes = resolve_targets(weka, targets, {f.name: f.uid for f in filesystems.values()}, "quotas")
        for target in targets:
            if inodes[target.label] is None:
                raise fail(
                    "NotFound",
                    f"{target.label} ({target.path} on Weka filesystem {target.filesystem}) "
                    "does not exist; run storage.filesystems first",
                )

        def ensure(target: QuotaTarget) -> EnsureResult:
            fs, inode = filesystems[target.filesystem], inodes[target.label]
            assert inode is not None
            return _ensure_quota(weka, contract, target, current_quotas[fs.uid].get(inode), fs.uid, inode)

        results = fan_out(ensure, targets, "quotas")
    return StepResult(results=results, facts=inp.facts)


@defn(runbook.STORAGE_CSI)
def ensure_csi(inp: StepInput) -> StepResult:
    """Strict isolation: token Secret, StorageClass ``weka-<slug>`` (Retain) and the tenant PVC."""
    contract = inp.contract
    if not is_strict(contract):
        return StepResult(facts=inp.facts)
    results = ensure_csi_objects(contract, inp.run_id)
    activity.logger.info(
        "storage.csi %s: %s", contract.slug, ", ".join(f"{r.kind}/{r.name}={r.outcome.value}" for r in results)
    )
    return StepResult(results=results, facts=inp.facts.model_copy(update={"csi_secret": csi_secret_name(contract)}))


# -- undo ----------------------------------------------------------------------------------------


@defn(runbook.STORAGE.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Compensate one storage step: only what that step created (or restore what it updated); quotas a few at a
    time (:mod:`activities.common.fanout`, heartbeating)."""
    contract = inp.contract
    changed = [r for r in inp.results if r.outcome in (Outcome.created, Outcome.updated)]
    if inp.step == runbook.STORAGE_CSI.short:
        return [undone for r in reversed(changed) for undone in undo_csi(contract, r)]
    if inp.step == runbook.STORAGE_QUOTAS.short:
        weka = tenant_session(contract) if changed else None
        if weka is None:
            return [deleted(False, r) for r in changed]
        with weka:
            filesystems = {f.name: f.uid for f in weka.filesystems()}
            present = {uid: weka.quotas(uid) for uid in filesystems.values()}
            targets = {t.label: t for t in quota_targets(contract)}
            located = fan_out(lambda r: locate_quota(weka, targets, filesystems, r), changed, "locate")

            def undo_one(pair: tuple[EnsureResult, EnsureResult | None]) -> EnsureResult:
                result, found = pair
                return undo_quota(weka, contract, present, found) if found else deleted(False, result)

            return fan_out(undo_one, list(zip(changed, located, strict=True)), "quotas")
    if inp.step == runbook.STORAGE_FILESYSTEMS.short:
        return undo_filesystems(contract, changed)
    return []


ACTIVITIES = [preflight, plan, ensure_filesystems, ensure_quotas, ensure_csi, undo]
