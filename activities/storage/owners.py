"""The tenant's Weka directories and their owners: make the missing ones, correct the owner of existing ones this
tenant covers, and put a corrected owner back when the run rolls back.

A directory is made, or its owner and mode set, by the directory Job (:mod:`activities.storage.dirs`), which also logs
the owner each existing directory had. An existing directory keeps the owner it had unless this tenant provably covers
it: every directory of a strict-isolation tenant (its own organization's filesystems), ``/scratch/<slug>`` (named for
the tenant), and on the shared home filesystem a ``/home/<user>`` that a version of the tenant's record
(:mod:`activities.common.recordstore`) shows this tenant made or set the owner of. Such a directory is checked and
given the owner it would be made with (a re-onboarded tenant's group has a new gid; the directory would keep the gone
group's): the result is ``updated``, with the owner found (``previous``) and the one set (``owner``), or ``unchanged``
when they were the same. The check is skipped (``unchanged``) when the record's latest version shows its run left the
directory with the owner wanted now (a re-run of an onboarded tenant runs no Job); an ``offboarded`` version records
no owners, so a re-onboarding always checks. Any other existing directory is left as found (``unchanged``, and why).
Every result records the owner the directory has after the run (``owner``). Undo sets ``previous`` back on the
directories a run corrected; a rollback never removes a directory.

In the shared org the directories are the tenant's storage, so the plan lists them (:func:`directory_plan`):
``create`` when missing, ``leave`` (and why) when one exists that this tenant cannot prove its own, else
``unchanged``. An offboarding that purges the tenant's data (confirmed at its gate) turns the ``unchanged`` ones
into deletions, and :func:`purge_directories` removes them with all they hold (the directory Job with
:func:`models.weka_mount.removal_command`); in strict isolation they go with the tenant's filesystems.
"""

from __future__ import annotations

from tenantflow.activities.common import recordstore
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.weka_client import Credentials, Filesystem, WekaClient
from tenantflow.activities.storage.dirs import make_directories, remove_directories
from tenantflow.activities.storage.layout import (
    LAYER,
    QuotaTarget,
    deleted,
    is_strict,
    left_alone,
    plan_action,
    quota_targets,
    resolve_targets,
    storage_result,
    tenant_credentials,
)
from tenantflow.models.onboarding import Facts
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.records import RecordKey, TenantRecord
from tenantflow.models.results import DirectoryOwner, EnsureResult, Kept, Outcome, WekaDirectory
from tenantflow.models.tenant import TenantContract
from tenantflow.models.weka_mount import DirectorySpec, Owner


def directory_spec(facts: Facts, role: str, path: str) -> DirectorySpec:
    """Who owns the directory: the user and the tenant group (home, 0700), root and the group (scratch, 2770)."""
    if facts.group_gid is None:
        raise fail("NotFound", f"the tenant group's gid is unknown; run identity.group before storage ({path})")
    if role == "scratch":
        return DirectorySpec(path, 0, facts.group_gid, "2770")
    user = facts.users.get(path.strip("/"))
    if user is None:
        raise fail("NotFound", f"the uid of {path.strip('/')} is unknown; run identity.users before storage")
    return DirectorySpec(path, user.uid_number, facts.group_gid, "0700")


def mount_credentials(contract: TenantContract) -> Credentials:
    """Who mounts the tenant's filesystems for the directory Job: the org admin, or the platform user."""
    conf = settings()
    return tenant_credentials(contract) or Credentials(
        username=conf.weka_username, password=conf.weka_password, org=conf.weka_org
    )


def record_history(contract: TenantContract) -> list[TenantRecord]:
    """Every version of the tenant's record, oldest first (none: the tenant was never onboarded in this cluster)."""
    return recordstore.read_versions(RecordKey.of_tenant(contract.cluster, contract.slug), TenantRecord)


def _directories(record: TenantRecord) -> list[tuple[EnsureResult, WekaDirectory]]:
    return [(r, r.data) for r in record.applied if r.kind == "WekaDirectory" and isinstance(r.data, WekaDirectory)]


def _recorded_owners(history: list[TenantRecord]) -> dict[str, DirectoryOwner]:
    """The owner the latest version's run left on each directory, by label (an ``offboarded`` version records
    none)."""
    return {r.name: data.owner for r, data in _directories(history[-1]) if data.owner} if history else {}


def not_covered(contract: TenantContract, existing: list[QuotaTarget], history: list[TenantRecord]) -> dict[str, str]:
    """Existing directories this tenant cannot prove are its own, by label, with why they are left as found: on the
    shared home filesystem, a home no version of the record shows this tenant made or set the owner of."""
    ours = {
        r.name
        for record in history
        for r, data in _directories(record)
        if r.outcome in (Outcome.created, Outcome.updated) or data.owner
    }
    return {
        t.label: f"{t.label} existed on the shared home filesystem and no record of {contract.slug} shows it made "
        "it or set its owner: its owner is left as found"
        for t in existing
        if t.role == "home" and not is_strict(contract) and t.label not in ours
    }


def directory_plan(contract: TenantContract, found: dict[str, int | None]) -> list[PlanStep]:
    """The shared-org tenant's directories as the plan shows them, from ``found`` (each target's inode by label,
    None when missing)."""
    targets = quota_targets(contract)
    existing = [t for t in targets if found.get(t.label) is not None]
    left = not_covered(contract, existing, record_history(contract) if existing else [])
    steps = []
    for target in targets:
        detail: dict[str, object] = {"filesystem": target.filesystem, "path": target.path}
        if target.label in left:
            action, detail = Action.leave, {**detail, "why": left[target.label]}
        else:
            action = plan_action(found.get(target.label) is not None)
        steps.append(PlanStep(layer=LAYER, kind="WekaDirectory", name=target.label, action=action, detail=detail))
    return steps


def purge_directories(contract: TenantContract, results: list[EnsureResult]) -> list[EnsureResult]:
    """Remove the directories of a purged shared-org tenant (the teardown plan's deletions, by label: the path
    comes from the contract, never from the result), one Job per filesystem; each result ``deleted``, or
    ``absent`` when it was already gone."""
    targets = {t.label: t for t in quota_targets(contract)}
    by_fs: dict[str, list[QuotaTarget]] = {}
    for r in results:
        target = targets.get(r.name)
        if target is not None:
            by_fs.setdefault(target.filesystem, []).append(target)
    removed = {
        (filesystem, path)
        for filesystem, chosen in by_fs.items()
        for path in remove_directories(contract, filesystem, mount_credentials(contract), [t.path for t in chosen])
    }
    return [
        deleted((targets[r.name].filesystem, targets[r.name].path) in removed, r)
        if r.name in targets
        else left_alone(r, f"{r.name} is none of {contract.slug}'s directories")
        for r in results
    ]


def as_owner(owner: Owner) -> DirectoryOwner:
    return DirectoryOwner(uid=owner.uid, gid=owner.gid, mode=f"{owner.mode:o}")


def _result(fs: Filesystem, target: QuotaTarget, wanted: DirectoryOwner, found: DirectoryOwner | None) -> EnsureResult:
    """Created (``found`` None: it did not exist), unchanged (it had ``wanted``) or updated (from ``found``)."""
    data = WekaDirectory(filesystem=fs.name, path=target.path, owner=wanted)
    if found is None:
        return storage_result("WekaDirectory", target.label, Outcome.created, data=data)
    if found == wanted:
        return storage_result("WekaDirectory", target.label, Outcome.unchanged, data=data)
    return storage_result(
        "WekaDirectory", target.label, Outcome.updated, data=data.model_copy(update={"previous": found})
    )


def ensure_directories(
    weka: WekaClient, contract: TenantContract, facts: Facts, filesystems: dict[str, Filesystem]
) -> list[EnsureResult]:
    """Make the missing directories and check (and correct) the owner of the existing ones this tenant covers,
    unless its record shows it left them with the owner wanted now (one Job per filesystem; none when nothing is
    to be made or checked: a re-run writes nothing); a result per directory."""
    targets = quota_targets(contract)
    uids = {f.name: f.uid for f in filesystems.values()}
    found = resolve_targets(weka, targets, uids, "directories")
    existed = {label for label, inode in found.items() if inode is not None}
    history = record_history(contract) if existed else []
    left = not_covered(contract, [t for t in targets if t.label in existed], history)
    recorded = _recorded_owners(history)
    wanted = {t.label: directory_spec(facts, t.role, t.path) for t in targets if t.label not in left}
    checked = [
        t
        for t in targets
        if t.label in wanted
        and (t.label not in existed or recorded.get(t.label) != as_owner(Owner.of(wanted[t.label])))
    ]
    before: dict[str, DirectoryOwner] = {}
    for role, fs in filesystems.items():
        specs = [wanted[t.label] for t in checked if t.role == role]
        owners = make_directories(contract, fs.name, mount_credentials(contract), specs)
        before.update({f"{role}:{path}": as_owner(owner) for path, owner in owners.items()})
    made = resolve_targets(weka, [t for t in targets if t.label not in existed], uids, "made")
    results = []
    for target in targets:
        fs = filesystems[target.role]
        if target.label in left:
            kept = Kept(kept=left[target.label])
            results.append(storage_result("WekaDirectory", target.label, Outcome.unchanged, data=kept))
            continue
        if target.label not in existed and made[target.label] is None:
            raise fail(
                "NotFound",
                f"{target.label} is still missing on Weka filesystem {fs.name} after the directory Job completed",
            )
        owner = as_owner(Owner.of(wanted[target.label]))
        had = before.get(f"{target.role}:{target.path}") if target in checked else owner
        if target.label in existed and had is None:
            raise fail("NotFound", f"the directory Job logged no owner for {target.label}, which existed")
        results.append(_result(fs, target, owner, had if target.label in existed else None))
    return results


def restore_owners(contract: TenantContract, results: list[EnsureResult]) -> list[EnsureResult]:
    """Put back the owner a run found on each directory it corrected (``updated`` results), one Job per
    filesystem; the results as restored (``updated``)."""
    by_fs: dict[str, list[tuple[EnsureResult, DirectorySpec]]] = {}
    for r in results:
        data = r.data_as(WekaDirectory)
        if data.previous is not None:
            spec = DirectorySpec(data.path, data.previous.uid, data.previous.gid, data.previous.mode.zfill(4))
            by_fs.setdefault(data.filesystem, []).append((r, spec))
    for filesystem, pairs in by_fs.items():
        make_directories(contract, filesystem, mount_credentials(contract), [spec for _, spec in pairs])
    return [r for pairs in by_fs.values() for r, _ in pairs]
