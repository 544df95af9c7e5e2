"""The owner of an existing tenant directory is checked and corrected, only where the tenant covers it: a tenant
onboarded again after an offboarding that kept its data has a new group (a new gid), and its directories must
carry that gid, not the gone group's (on a real Weka mount its users could not enter them); a rollback puts the
owner back; a home on the shared filesystem that the tenant's record does not show it made is left as found."""

from __future__ import annotations

from storage_harness import GROUP_GID, UIDS, StorageLab, identity_facts, record_tenant, run_activity

from tenantflow.activities.storage import steps as storage
from tenantflow.models.onboarding import StepInput, UndoInput
from tenantflow.models.records import RecordStatus
from tenantflow.models.results import DirectoryOwner, Kept, Outcome, WekaDirectory
from tenantflow.models.tenant import StorageIsolation

NEW_GID = GROUP_GID + 1000


def owners(lab: StorageLab) -> dict[tuple[str, str], list[int]]:
    """What the directory Jobs set, as the Weka stand-in recorded it (what a pod's ``stat`` on the mount shows)."""
    return {
        (fs.name, path): owner
        for fs in lab.weka.cluster.filesystems.values()
        for path, owner in fs.owners.items()
        if not path.startswith("/csi-volumes")
    }


async def test_a_reonboarded_tenant_gets_its_directories_under_its_new_group(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract()
    first = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    await record_tenant(contract, first.results)
    await record_tenant(contract, [], RecordStatus.offboarded)
    facts = identity_facts()
    facts = facts.model_copy(
        update={
            "group_gid": NEW_GID,
            "users": {u: f.model_copy(update={"gid_number": NEW_GID}) for u, f in facts.users.items()},
        }
    )

    again = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=facts))

    dirs = {r.name: r for r in again.results if r.kind == "WekaDirectory"}
    assert {name: r.outcome for name, r in dirs.items()} == dict.fromkeys(
        ("/home/alice", "/home/bob", "/scratch/tenant-foo"), Outcome.updated
    )
    scratch = dirs["/scratch/tenant-foo"].data_as(WekaDirectory)
    assert (scratch.previous, scratch.owner) == (
        DirectoryOwner(uid=0, gid=GROUP_GID, mode="2770"),
        DirectoryOwner(uid=0, gid=NEW_GID, mode="2770"),
    )
    assert owners(storage_lab) == {
        ("tenant-foo-home", "/alice"): [UIDS["alice"], NEW_GID, 0o700],
        ("tenant-foo-home", "/bob"): [UIDS["bob"], NEW_GID, 0o700],
        ("tenant-foo-scratch", "/tenant-foo"): [0, NEW_GID, 0o2770],
    }

    undone = await run_activity(
        storage.undo, UndoInput(contract=contract, facts=again.facts, step="filesystems", results=again.results)
    )
    assert {r.name: r.outcome for r in undone} == {name: Outcome.updated for name in dirs}
    assert {gid for _, gid, _ in owners(storage_lab).values()} == {GROUP_GID}, "the rollback put the owners back"


async def test_a_shared_home_the_tenant_did_not_make_is_left_as_found(storage_lab: StorageLab) -> None:
    """/alice on the shared home filesystem, made for someone else: the tenant creates the rest and never chowns
    it, not even once its record lists alice (the record shows it left /alice as found)."""
    home = next(f for f in storage_lab.weka.cluster.filesystems.values() if f.name == "home")
    home.mkdir("/alice")
    home.set_owner("/alice", 4242, 7000, 0o700)
    contract = storage_lab.contract(StorageIsolation.shared_org)

    done = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))

    outcomes = {r.name: r.outcome for r in done.results}
    assert outcomes == {
        "/home/alice": Outcome.unchanged,
        "/home/bob": Outcome.created,
        "/scratch/tenant-foo": Outcome.created,
    }
    alice = next(r for r in done.results if r.name == "/home/alice")
    assert "no record of tenant-foo shows it made it or set its owner" in alice.data_as(Kept).kept
    assert home.owners["/alice"] == [4242, 7000, 0o700]

    await record_tenant(contract, done.results)
    again = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    assert {r.name: r.outcome for r in again.results} == dict.fromkeys(outcomes, Outcome.unchanged)
    assert isinstance(next(r for r in again.results if r.name == "/home/alice").data, Kept)
    assert home.owners["/alice"] == [4242, 7000, 0o700]
