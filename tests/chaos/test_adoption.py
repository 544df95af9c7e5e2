"""Never take what is not ours (issue 26, items 1-3), against the whole lab with a worker process.

* ``zara`` is created in Authentik by someone else (another email, no tenantflow marker) while the plan waits: the
  re-plan after approval runs preflight too and refuses her with the fix; nothing is written, nothing adopted, and
  her account is as she left it.
* With ``adopt_existing: true`` and another email the plan line of ``zara`` shows the old and new email, name and
  SSH key fingerprints (as ``ssh-keygen -l`` prints them); approved, the tenant is onboarded; she sets her own email,
  and at offboarding her account gets back what tenantflow overwrote and still holds (her new email stays) and leaves
  the group, never deactivated.
* ``zara`` adopted as approved changes her email after the re-plan, while ``identity.group`` is held (its create
  answered 503 until she has): ``identity.users`` compares her account with the approved line before any write and
  refuses it naming the field and the fix; the run rolls back and her account is as she made it.
* ``zara`` made by someone else (another email) after the re-plan, whose line said create, with ``adopt_existing:
  true``: ``identity.users`` refuses her before any write (no approved line names her, her email is not the
  contract's); the run rolls back and her account is as she made it.
* A namespace created by hand after the re-plan is adopted by ``kube.namespace`` whose answer is lost (the lab drops
  the PATCH's response after committing it); the retry finds it labelled as ours. A forced failure later
  (``kube.rbac``'s create refused with a 403) rolls the run back: the namespace, which tenantflow never made,
  survives with its uid.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import APPLY, IDENTITY_GROUP
from tenantflow.models.tenant import TenantContract
from tests.approvers import reviewer
from tests.chaos.conftest import Rig, outcome, small_tenant
from tests.chaos.kit import (
    STATS,
    clear_faults,
    comparable,
    compare_worlds,
    faulted_requests,
    foreign_touched,
    set_faults,
    wait_until,
)
from tests.chaos.kit import world as chaos_world
from tests.integration.runs import offboard
from tests.integration.world import world_snapshot
from tests.labfixture import authentik_api


def kubectl(lab: LabEndpoints, *args: str) -> str:
    argv = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *args]
    done = subprocess.run(argv, env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


ZARA_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl zara@home"


def make_zara(lab: LabEndpoints) -> dict[str, Any]:
    """Someone else's account: her email, her key, in no tenant, no tenantflow marker."""
    body = {
        "username": "zara",
        "name": "Zara Elsewhere",
        "email": "zara@elsewhere.example",
        "attributes": {"ssh_keys": ZARA_KEY, "department": "physics"},
    }
    with authentik_api(lab) as ak:
        made = ak.post("/core/users/", json=body)
        made.raise_for_status()
        return dict(made.json())


def zara_now(lab: LabEndpoints) -> dict[str, Any]:
    with authentik_api(lab) as ak:
        [user] = ak.get("/core/users/", params={"username": "zara"}).json()["results"]
    return dict(user)


def remove_zara(lab: LabEndpoints, pk: int) -> None:
    with authentik_api(lab) as ak:
        ak.delete(f"/core/users/{pk}/").raise_for_status()


def as_she_left_it(user: dict[str, Any]) -> tuple[Any, ...]:
    return user["email"], user["name"], user["attributes"], user["groups"], user["is_active"]


def fingerprint(key: str, tmp_path: Path) -> str:
    path = tmp_path / "key.pub"
    path.write_text(key + "\n")
    done = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(path)], capture_output=True, text=True)
    return done.stdout.split()[1]


def ours(contract: TenantContract) -> tuple[str, ...]:
    return (contract.slug, contract.slurm.team_account, *contract.usernames)


async def test_zara_made_by_someone_else_after_the_plan_is_refused_at_the_replans_preflight(
    rig: Rig, chaos_lab: LabEndpoints
) -> None:
    scenario = STATS.scenario("user zara created by someone else between plan and approval")
    contract = small_tenant(chaos_lab, "tenant-zr", ("zara", "zr-b"))
    handle = await rig.api.start_onboarding(contract)
    zara: dict[str, Any] = {}
    try:
        first = await rig.api.wait_for_plan(handle.id)
        assert first.plan_hash and first.plan is not None
        assert {(s.name, s.action.value) for s in first.plan.steps if s.kind == "User"} >= {("zara", "create")}
        zara = make_zara(chaos_lab)
        start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
        await reviewer(rig.api).approve(handle.id, first.plan_hash)
        state, message = await outcome(rig.api, handle.id)
        status = await rig.api.status(handle.id)
        assert state == "failed" and "preflight failed, nothing was written" in message, message
        assert "username zara is already an Authentik account" in message and "adopt_existing: true" in message
        assert status.plan_hash == first.plan_hash, "no plan with an adopt line for zara was published"
        assert not {s.name for s in status.steps} & {s.name for s in APPLY}, "nothing applied"
        assert as_she_left_it(zara_now(chaos_lab)) == as_she_left_it(zara)
        touched = foreign_touched(before, world_snapshot(chaos_lab), ours(contract), scenario)
        assert not touched, "\n".join(touched)
        compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    finally:
        if await rig.api.running(handle.id):
            await rig.api.client.get_workflow_handle(handle.id).terminate("the scenario failed")
        if zara:
            remove_zara(chaos_lab, zara["pk"])
    STATS.runs_failed_as_expected += 1
    scenario.outcome = "refused at the re-plan's preflight"


async def test_adopting_zara_shows_old_and_new_values_and_gives_her_account_back(
    rig: Rig, chaos_lab: LabEndpoints, tmp_path: Path
) -> None:
    scenario = STATS.scenario("zara adopted with another email: old and new values shown, never deactivated")
    base = small_tenant(chaos_lab, "tenant-za", ("zara", "za-b"))
    users = [u.model_copy(update={"adopt_existing": u.username == "zara"}) for u in base.users]
    contract = base.model_copy(update={"users": users})
    zara = make_zara(chaos_lab)
    try:
        start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
        handle = await rig.api.start_onboarding(contract)
        status = await rig.api.wait_for_plan(handle.id)
        assert status.plan is not None and status.plan_hash
        [line] = [s for s in status.plan.steps if s.kind == "User" and s.name == "zara"]
        keys = ", ".join(fingerprint(k, tmp_path) for k in contract.users[0].ssh_keys)
        assert line.action.value == "adopt"
        assert line.detail["email"] == f"zara@elsewhere.example -> {contract.users[0].email}"
        assert line.detail["name"] == f"Zara Elsewhere -> {contract.users[0].name}"
        assert line.detail["ssh_keys"] == f"{fingerprint(ZARA_KEY, tmp_path)} -> {keys}"
        await reviewer(rig.api).approve(handle.id, status.plan_hash)
        state, message = await outcome(rig.api, handle.id)
        assert state == "completed", message
        taken = zara_now(chaos_lab)
        assert taken["email"] == contract.users[0].email and taken["is_active"]
        with authentik_api(chaos_lab) as ak:  # she sets her own email after the adoption
            ak.patch(f"/core/users/{zara['pk']}/", json={"email": "zara@moved.example"}).raise_for_status()
        gone = await offboard(rig.api, contract, purge=True)
        assert gone.status == "completed", gone.message
        mine = as_she_left_it({**zara, "email": "zara@moved.example"})
        assert as_she_left_it(zara_now(chaos_lab)) == mine, "her account is hers again, active, with her new email"
        with authentik_api(chaos_lab) as ak:  # she changes it back: the world is then the one before the run
            ak.patch(f"/core/users/{zara['pk']}/", json={"email": zara["email"]}).raise_for_status()
        touched = foreign_touched(before, world_snapshot(chaos_lab), (contract.slug, contract.slurm.team_account))
        scenario.foreign_touched += len(touched)
        assert not touched, "\n".join(touched)
        compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    finally:
        remove_zara(chaos_lab, zara["pk"])
    STATS.runs_completed += 1
    scenario.outcome = "adopted as approved, given back at offboarding"


async def test_zara_changed_after_the_approval_is_not_overwritten(rig: Rig, chaos_lab: LabEndpoints) -> None:
    clear_faults(chaos_lab)
    scenario = STATS.scenario("adopted account changed after approval: not overwritten")
    base = small_tenant(chaos_lab, "tenant-zc", ("zara", "zc-b"))
    users = [u.model_copy(update={"adopt_existing": u.username == "zara"}) for u in base.users]
    contract = base.model_copy(update={"users": users})
    zara = make_zara(chaos_lab)
    try:
        start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
        handle = await rig.api.start_onboarding(contract)
        try:
            status = await rig.api.wait_for_plan(handle.id)
            assert status.plan_hash
            create = r"/core/groups/$"
            set_faults(chaos_lab, [{"methods": ["POST"], "path": create, "error_rate": 1.0}], services=["authentik"])
            await reviewer(rig.api).approve(handle.id, status.plan_hash)
            held = await wait_until(
                rig.api,
                handle,
                lambda _: bool(faulted_requests(chaos_lab, "authentik", "POST", create)),
                what="identity.group's create, held",
            )
            assert held.stage == f"apply:{IDENTITY_GROUP.name}", held.stage
            with authentik_api(chaos_lab) as ak:
                ak.patch(f"/core/users/{zara['pk']}/", json={"email": "zara@moved.example"}).raise_for_status()
            moved = zara_now(chaos_lab)
            clear_faults(chaos_lab)
            state, message = await outcome(rig.api, handle.id)
            assert state == "failed" and "zara changed after the plan adopting it was approved" in message, message
            assert f"email: zara@elsewhere.example -> {contract.users[0].email} when approved" in message, message
            assert f"zara@moved.example -> {contract.users[0].email} now" in message, message
            final = await rig.api.status(handle.id)
            assert final.stage == "rolled-back" and not final.leftovers, final.stage
            assert zara_now(chaos_lab) == moved, "her account is as she changed it, nothing overwritten"
        finally:
            clear_faults(chaos_lab)
            if await rig.api.running(handle.id):
                await rig.api.client.get_workflow_handle(handle.id).terminate("the scenario failed")
            with authentik_api(chaos_lab) as ak:  # she changes it back: the world is then the one before the run
                ak.patch(f"/core/users/{zara['pk']}/", json={"email": zara["email"]}).raise_for_status()
        touched = foreign_touched(before, world_snapshot(chaos_lab), (contract.slug, contract.slurm.team_account))
        scenario.foreign_touched += len(touched)
        assert not touched, "\n".join(touched)
        compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    finally:
        remove_zara(chaos_lab, zara["pk"])
    STATS.runs_failed_as_expected += 1
    scenario.outcome = "refused before any write, rolled back, her account kept"


async def test_zara_made_after_the_replan_is_not_adopted_without_an_approval_naming_her(
    rig: Rig, chaos_lab: LabEndpoints
) -> None:
    clear_faults(chaos_lab)
    scenario = STATS.scenario("zara made after the re-plan (adopt_existing, another email): not adopted")
    base = small_tenant(chaos_lab, "tenant-zn", ("zara", "zn-b"))
    users = [u.model_copy(update={"adopt_existing": u.username == "zara"}) for u in base.users]
    contract = base.model_copy(update={"users": users})
    start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
    handle = await rig.api.start_onboarding(contract)
    zara: dict[str, Any] = {}
    try:
        status = await rig.api.wait_for_plan(handle.id)
        assert status.plan is not None and status.plan_hash
        assert ("zara", "create") in {(s.name, s.action.value) for s in status.plan.steps if s.kind == "User"}
        create = r"/core/groups/$"
        set_faults(chaos_lab, [{"methods": ["POST"], "path": create, "error_rate": 1.0}], services=["authentik"])
        await reviewer(rig.api).approve(handle.id, status.plan_hash)
        held = await wait_until(
            rig.api,
            handle,
            lambda _: bool(faulted_requests(chaos_lab, "authentik", "POST", create)),
            what="identity.group's create, held",
        )
        assert held.stage == f"apply:{IDENTITY_GROUP.name}", held.stage
        zara = make_zara(chaos_lab)
        clear_faults(chaos_lab)
        state, message = await outcome(rig.api, handle.id)
        assert state == "failed" and "zara exists" in message and "does not adopt it" in message, message
        assert "adopt_existing: true" in message and "Fix: start the run again" in message, message
        final = await rig.api.status(handle.id)
        assert final.stage == "rolled-back" and not final.leftovers, final.stage
        assert as_she_left_it(zara_now(chaos_lab)) == as_she_left_it(zara), "her account as she made it"
    finally:
        clear_faults(chaos_lab)
        if await rig.api.running(handle.id):
            await rig.api.client.get_workflow_handle(handle.id).terminate("the scenario failed")
        if zara:
            remove_zara(chaos_lab, zara["pk"])
    touched = foreign_touched(before, world_snapshot(chaos_lab), (contract.slug, contract.slurm.team_account))
    scenario.foreign_touched += len(touched)
    assert not touched, "\n".join(touched)
    compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    STATS.runs_failed_as_expected += 1
    scenario.outcome = "refused before any write, rolled back, her account kept"


async def test_a_namespace_made_by_hand_after_the_replan_survives_the_rollback(
    rig: Rig, chaos_lab: LabEndpoints
) -> None:
    clear_faults(chaos_lab)
    scenario = STATS.scenario("namespace made by hand after the re-plan, adopt answer lost, later failure")
    contract = small_tenant(chaos_lab, "tenant-nh", ("nh-a", "nh-b"))
    start, before = chaos_world(chaos_lab), world_snapshot(chaos_lab)
    made, handle = "", await rig.api.start_onboarding(contract)
    try:
        first = await rig.api.wait_for_plan(handle.id)
        assert first.plan_hash
        await reviewer(rig.api).approve(handle.id, first.plan_hash)
        await wait_until(rig.api, handle, lambda s: s.stage.startswith("apply:"), what="the first write")
        kubectl(chaos_lab, "create", "namespace", contract.namespace)
        made = kubectl(chaos_lab, "get", "namespace", contract.namespace, "-o", "jsonpath={.metadata.uid}")
        lost = {"methods": ["PATCH"], "path": rf"^/api/v1/namespaces/{contract.namespace}$", "drop_after_rate": 1.0}
        refused = {"methods": ["POST"], "path": r"/rolebindings$", "error_rate": 1.0, "error_status": 403}
        set_faults(chaos_lab, [{**lost, "max_fires": 1}, refused], services=["kube-tenant-cluster"])
        state, message = await outcome(rig.api, handle.id)
        assert state == "failed", message
        assert faulted_requests(chaos_lab, "kube-tenant-cluster", "PATCH", rf"/namespaces/{contract.namespace}$")
        status = await rig.api.status(handle.id)
        assert status.stage == "rolled-back" and not status.leftovers, status.stage
        kept = kubectl(chaos_lab, "get", "namespace", contract.namespace, "-o", "jsonpath={.metadata.uid}")
        assert kept == made, "the namespace tenantflow never made survives the rollback"
    finally:
        clear_faults(chaos_lab)
        if await rig.api.running(handle.id):
            await rig.api.client.get_workflow_handle(handle.id).terminate("the scenario failed")
        if made:
            kubectl(chaos_lab, "delete", "namespace", contract.namespace, "--wait=true")
    touched = foreign_touched(before, world_snapshot(chaos_lab), ours(contract), scenario)
    assert not touched, "\n".join(touched)
    compare_worlds(start, chaos_world(chaos_lab), comparable, scenario=scenario)
    STATS.runs_failed_as_expected += 1
    scenario.outcome = "rolled back, the hand-made namespace kept"
