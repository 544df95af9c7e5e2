"""Offboarding a shared-org tenant with its data purged: its directories on the shared home and scratch
filesystems go (with all they hold and their quotas), and nothing else does: not another tenant's directories,
nor a home the tenant never made. The teardown's deletions are made from the storage plan the way the
offboarding workflow makes them (``teardown_plan``, then the saga's ``with_planned``)."""

from __future__ import annotations

from storage_harness import StorageLab, identity_facts, record_tenant, run_activity
from test_storage_ownership import as_run

from tenantflow.activities.storage import steps as storage
from tenantflow.models.onboarding import StepInput, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.models.runbook import STORAGE_FILESYSTEMS, STORAGE_QUOTAS
from tenantflow.models.tenant import StorageIsolation, TenantContract
from tenantflow.workflows.offboarding import teardown_plan
from tenantflow.workflows.saga import with_planned

FOREIGN_ALICE = [4242, 7000, 0o700]
"""The owner of an /alice home someone else made on the shared home filesystem before tenant-foo came."""


async def onboard(contract: TenantContract, users: tuple[str, ...]) -> None:
    inp = StepInput(contract=contract, facts=identity_facts(users))
    done = await run_activity(storage.ensure_filesystems, inp)
    await run_activity(storage.ensure_quotas, inp)
    await record_tenant(contract, done.results)


def layout(lab: StorageLab) -> dict[str, tuple[list[str], list[str]]]:
    """Each shared filesystem's directories and the paths with a quota, as the Weka stand-in holds them."""
    return {
        fs.name: (sorted(fs.directories), sorted(q.path for q in fs.quotas.values()))
        for fs in lab.weka.cluster.filesystems.values()
        if fs.name in ("home", "scratch")
    }


async def undo_deletions(contract: TenantContract, plan: list[PlanStep], workflow_type: str) -> list[EnsureResult]:
    """Run the storage undos of the purge's deletions, quotas first (the runbook's order), as ``workflow_type``."""
    deletions = teardown_plan(contract.slug, plan, purge_data=True).steps
    env = as_run(f"offboard/{contract.slug}", workflow_type)
    undone = []
    for step in (STORAGE_QUOTAS, STORAGE_FILESYSTEMS):
        results = with_planned(
            [], [p for p in deletions if p.detail["step"] == step.name and p.action is Action.delete]
        )
        undo = UndoInput(contract=contract, facts=identity_facts(), step=step.short, results=results)
        undone += await run_activity(storage.undo, undo, env=env)
    return undone


async def test_a_purge_removes_the_shared_org_tenants_directories_and_nothing_else(storage_lab: StorageLab) -> None:
    home = next(f for f in storage_lab.weka.cluster.filesystems.values() if f.name == "home")
    home.mkdir("/alice")
    home.set_owner("/alice", *FOREIGN_ALICE)
    foo = storage_lab.contract(StorageIsolation.shared_org)
    bar = storage_lab.contract(StorageIsolation.shared_org, slug="tenant-bar")
    bar = bar.model_copy(update={"users": [u.model_copy(update={"username": "carol"}) for u in bar.users[:1]]})
    await onboard(foo, ("alice", "bob"))
    await onboard(bar, ("carol",))
    assert layout(storage_lab) == {
        "home": (["/", "/alice", "/bob", "/carol"], ["/alice", "/bob", "/carol"]),
        "scratch": (["/", "/tenant-bar", "/tenant-foo"], ["/tenant-bar", "/tenant-foo"]),
    }

    plan = await run_activity(storage.plan, StepInput(contract=foo))
    assert {s.name: s.action for s in plan if s.kind == "WekaDirectory"} == {
        "/home/alice": Action.leave,
        "/home/bob": Action.unchanged,
        "/scratch/tenant-foo": Action.unchanged,
    }

    kept = await undo_deletions(foo, plan, "TenantOnboarding")
    assert {r.name: r.outcome for r in kept if r.kind == "WekaDirectory"} == {
        "/home/bob": Outcome.unchanged,
        "/scratch/tenant-foo": Outcome.unchanged,
    }, "a rollback never removes a directory"
    assert layout(storage_lab)["scratch"][0] == ["/", "/tenant-bar", "/tenant-foo"]

    purged = await undo_deletions(foo, plan, "TenantOffboarding")
    assert {r.name: r.outcome for r in purged if r.kind == "WekaDirectory"} == {
        "/home/bob": Outcome.deleted,
        "/scratch/tenant-foo": Outcome.deleted,
    }
    assert layout(storage_lab) == {
        "home": (["/", "/alice", "/carol"], ["/carol"]),
        "scratch": (["/", "/tenant-bar"], ["/tenant-bar"]),
    }
    assert home.owners["/alice"] == FOREIGN_ALICE
