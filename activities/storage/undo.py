"""Undoing the storage layer: quotas and Weka filesystems this run can prove it made (owner markers, recorded uids),
directory owners it corrected, and (a confirmed purge of a shared-org tenant) its directories."""

from __future__ import annotations

from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.weka_client import Quota, WekaClient
from tenantflow.activities.storage.layout import (
    QuotaTarget,
    deleted,
    is_teardown,
    left_alone,
    org_is_ours,
    recorded_uid,
    tenant_session,
)
from tenantflow.activities.storage.owners import purge_directories, restore_owners
from tenantflow.models.results import (
    EnsureResult,
    Outcome,
    WekaQuota,
)
from tenantflow.models.tenant import TenantContract


def quota_owner(contract: TenantContract) -> str:
    """The marker tenantflow writes into a quota's ``owner`` field and checks before removing it."""
    return f"tenantflow:{contract.slug}"


def locate_quota(
    weka: WekaClient, targets: dict[str, QuotaTarget], filesystems: dict[str, str], result: EnsureResult
) -> EnsureResult | None:
    """A quota result with its filesystem uid and inode (looked up by label when the step never returned);
    ``targets``: the tenant's quota targets by label, ``filesystems``: the uid of each filesystem the session sees
    by name, both read once for all results."""
    heartbeat(f"storage.undo: locate {result.name}")
    if result.data_as(WekaQuota).inode_id is not None:
        return result
    target = targets.get(result.name)
    fs_uid = filesystems.get(target.filesystem) if target else None
    inode = weka.resolve_path(fs_uid, target.path) if fs_uid and target else None
    if fs_uid is None or target is None or inode is None:
        return None
    return result.model_copy(update={"data": WekaQuota(filesystem_uid=fs_uid, inode_id=inode, path=target.path)})


def undo_quota(
    weka: WekaClient, contract: TenantContract, present: dict[str, dict[int, Quota]], result: EnsureResult
) -> EnsureResult:
    """Delete a quota this run created (our marker on the same directory), or put back the limits it had
    (results located by :func:`locate_quota`)."""
    heartbeat(f"storage.undo quota {result.name}")
    data = result.data_as(WekaQuota)
    fs_uid, inode = str(data.filesystem_uid), int(data.inode_id or 0)
    current = present.get(fs_uid, {}).get(inode)
    if result.outcome is Outcome.created:
        if current is None:
            return deleted(False, result)
        same_dir = weka.resolve_path(fs_uid, str(data.path)) == inode if data.path else False
        if current.owner != quota_owner(contract) or not same_dir:
            return left_alone(result, f"quota owner {current.owner!r} or its directory is not this tenant's")
        return deleted(weka.delete_quota(fs_uid, inode), result)
    previous = data.previous
    if (
        fs_uid not in present
        or previous is None
        or (
            current is not None
            and (current.hard_limit_bytes, current.soft_limit_bytes) == (previous.hard, previous.soft)
        )
    ):
        return result.model_copy(update={"outcome": Outcome.absent})
    weka.set_quota(fs_uid, inode, str(data.path), previous.hard, previous.soft, current.owner if current else "")
    return result.model_copy(update={"outcome": Outcome.updated})


def undo_filesystems(contract: TenantContract, results: list[EnsureResult]) -> list[EnsureResult]:
    """Delete the filesystems and the org this run created: by the uid it recorded, or (the step never returned)
    the tenant org that accepts the admin's derived password, the marker only tenantflow can write, and the
    filesystems that org owns by name. A rollback leaves directories where they are and puts back the owner a
    directory had before this run corrected it; an offboarding (this step's deletions reach it only when the
    purge was confirmed) removes the shared-org directories its plan lists as the tenant's."""
    undone = restore_owners(
        contract, [r for r in results if r.kind == "WekaDirectory" and r.outcome is Outcome.updated]
    )
    created = [r for r in results if r.outcome is Outcome.created]
    directories = [r for r in created if r.kind == "WekaDirectory"]
    if is_teardown():
        undone.extend(purge_directories(contract, directories))
    else:
        undone.extend(
            left_alone(r, "directories stay: the filesystem may hold data or be shared with other tenants")
            for r in directories
        )
    fs_results = [r for r in created if r.kind == "WekaFilesystem"]
    tenant = tenant_session(contract) if fs_results else None
    if tenant is None:
        undone.extend(deleted(False, r) for r in fs_results)
    else:
        with tenant:
            by_name = {f.name: f.uid for f in tenant.filesystems()}
            for r in reversed(fs_results):
                heartbeat(f"storage.undo filesystem {r.name}")
                uid = recorded_uid(r) or by_name.get(r.name, "")
                if uid in by_name.values():
                    tenant.delete_filesystem(uid)
                undone.append(deleted(uid in by_name.values(), r))
    org_results = [r for r in created if r.kind == "WekaOrganization"]
    with WekaClient.from_settings() as weka:
        for r in org_results:
            org = weka.organization(contract.slug)
            ours = org is not None and (org.uid == recorded_uid(r) if recorded_uid(r) else org_is_ours(contract))
            if org is not None and ours:
                weka.delete_organization(org.uid)
            undone.append(deleted(ours, r) if org is None or ours else left_alone(r, "the org's uid differs"))
    return undone
