"""Adoption with proof (issue 26, item 1), the real identity activities against the Authentik stand-in.

The contract's rule: an existing account is adopted only when its email is the contract's, or when the plan line
shows the old and new email, name and SSH key fingerprints (``ssh-keygen -l`` prints the same ones); undo and the
tenant's offboarding give back what tenantflow overwrote and remove the membership, and never deactivate it. An
account that changed after the plan adopting it was approved is refused at write time, before any write.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from identity_harness import IdentityLab, make_contract, run_activity, ssh_key
from temporalio.exceptions import ApplicationError

from tenantflow.activities.identity import steps as identity
from tenantflow.models.onboarding import Facts, StepInput, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Outcome, Restored

WORKFLOW = "tenant/tenant-foo"


def keygen_fingerprint(key: str, tmp_path: Path) -> str:
    """What OpenSSH's own ``ssh-keygen -l -E sha256`` prints as the key's fingerprint."""
    path = tmp_path / "key.pub"
    path.write_text(key + "\n")
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(path)], capture_output=True, text=True)
    return out.stdout.split()[1]


async def zara(lab: IdentityLab, email: str) -> dict[str, object]:
    """Someone else's account ``zara``: not in any tenant, no tenantflow marker, her own key."""
    made = await lab.post(
        "/core/users/",
        {
            "username": "zara",
            "name": "Zara Elsewhere",
            "email": email,
            "attributes": {"ssh_keys": ssh_key("zara@home"), "department": "physics"},
        },
    )
    return dict(made)


async def adopt_lines(inp: StepInput) -> list[PlanStep]:
    """The plan's adopt lines, as the workflow gives them to ``identity.users`` once approved."""
    return [s for s in await run_activity(identity.plan, inp) if s.action is Action.adopt]


async def test_the_plan_line_of_an_unproven_adoption_shows_the_old_and_new_values(
    with_parent: IdentityLab, tmp_path: Path
) -> None:
    before = await zara(with_parent, "zara@elsewhere.example")
    contract = make_contract(usernames=("zara",), adopt=("zara",))
    (line,) = [s for s in await run_activity(identity.plan, StepInput(contract=contract)) if s.kind == "User"]
    assert line.action.value == "adopt"
    old_key = keygen_fingerprint(str(before["attributes"]["ssh_keys"]), tmp_path)  # type: ignore[index]
    new_keys = ", ".join(keygen_fingerprint(k, tmp_path) for k in contract.users[0].ssh_keys)
    assert line.detail["email"] == "zara@elsewhere.example -> zara@tenant-foo.example"
    assert line.detail["name"] == "Zara Elsewhere -> Zara Researcher"
    assert line.detail["ssh_keys"] == f"{old_key} -> {new_keys}"
    assert str(line.detail["proof"]).startswith("none")

    await with_parent.patch(f"/core/users/{before['pk']}/", {"email": "ZARA@tenant-foo.example"})
    (proven,) = [s for s in await run_activity(identity.plan, StepInput(contract=contract)) if s.kind == "User"]
    assert proven.detail["proof"] == "the account's email is the contract's"
    assert proven.detail["email"] == "ZARA@tenant-foo.example -> zara@tenant-foo.example"


async def test_undo_of_an_adoption_whose_answer_was_lost_gives_the_account_back(with_parent: IdentityLab) -> None:
    before = await zara(with_parent, "zara@elsewhere.example")
    contract = make_contract(usernames=("zara",), adopt=("zara",))
    inp = StepInput(contract=contract, run_id=WORKFLOW)
    approved = await adopt_lines(inp)
    group = await run_activity(identity.ensure_group, inp, workflow_id=WORKFLOW)
    inp = inp.model_copy(update={"facts": group.facts, "adoptions": approved})
    first = await run_activity(identity.ensure_users, inp, workflow_id=WORKFLOW)
    assert [r.outcome for r in first.results] == [Outcome.updated]
    retried = await run_activity(identity.ensure_users, inp, workflow_id=WORKFLOW)  # the first answer never came
    assert [r.outcome for r in retried.results] == [Outcome.updated], "the retry must report what the run changed"
    await run_activity(
        identity.undo,
        UndoInput(contract=contract, facts=retried.facts, step="users", results=retried.results),
        workflow_id=WORKFLOW,
    )
    after = await with_parent.user("zara")
    assert (after["email"], after["name"], after["attributes"], after["groups"], after["is_active"]) == (
        before["email"],
        before["name"],
        before["attributes"],
        [],
        True,
    )


async def test_offboarding_gives_an_adopted_account_back_and_never_deactivates_it(with_parent: IdentityLab) -> None:
    before = await zara(with_parent, "zara@tenant-foo.example")
    contract = make_contract(usernames=("alice", "zara"), adopt=("zara",))
    inp = StepInput(contract=contract, run_id=WORKFLOW)
    group = await run_activity(identity.ensure_group, inp, workflow_id=WORKFLOW)
    users = await run_activity(
        identity.ensure_users, inp.model_copy(update={"facts": group.facts}), workflow_id=WORKFLOW
    )
    assert [r.outcome for r in users.results] == [Outcome.created, Outcome.updated]
    # the offboarding reads the tenant and undoes every user as planned (it has no record of the onboarding's results)
    planned = [EnsureResult(layer="identity", kind="User", name=n, outcome=Outcome.created) for n in contract.usernames]
    await run_activity(
        identity.undo,
        UndoInput(contract=contract, facts=Facts(), step="users", results=planned),
        workflow_id="offboard/tenant-foo",
        workflow_type="TenantOffboarding",
    )
    alice, after = await with_parent.user("alice"), await with_parent.user("zara")
    assert alice["is_active"] is False, "a user tenantflow created is deactivated"
    assert (after["email"], after["name"], after["attributes"], after["groups"], after["is_active"]) == (
        before["email"],
        before["name"],
        before["attributes"],
        [],
        True,
    )


async def test_an_adopted_account_changed_after_the_approval_is_not_written(with_parent: IdentityLab) -> None:
    made = await zara(with_parent, "zara@elsewhere.example")
    contract = make_contract(usernames=("alice", "zara"), adopt=("zara",))
    inp = StepInput(contract=contract, run_id=WORKFLOW)
    approved = await adopt_lines(inp)
    group = await run_activity(identity.ensure_group, inp, workflow_id=WORKFLOW)
    await with_parent.patch(f"/core/users/{made['pk']}/", {"email": "zara@moved.example"})
    changed = await with_parent.user("zara")
    await with_parent.reset_journal()
    step_input = inp.model_copy(update={"facts": group.facts, "adoptions": approved})
    with pytest.raises(ApplicationError) as caught:
        await run_activity(identity.ensure_users, step_input, workflow_id=WORKFLOW)
    assert caught.value.type == "AdoptionRefused" and caught.value.non_retryable
    said = caught.value.message
    assert "zara changed after the plan adopting it was approved" in said, said
    assert "email: zara@elsewhere.example -> zara@tenant-foo.example when approved, " in said, said
    assert "zara@moved.example -> zara@tenant-foo.example now" in said and "Fix: start the run again" in said, said
    assert await with_parent.writes() == 0, "nothing written, alice not created either"
    assert await with_parent.user("zara") == changed


async def test_an_account_made_after_the_plan_is_adopted_only_when_its_email_is_the_contracts(
    with_parent: IdentityLab,
) -> None:
    contract = make_contract(usernames=("alice", "zara"), adopt=("zara",))
    inp = StepInput(contract=contract, run_id=WORKFLOW)
    assert not await adopt_lines(inp), "the approved plan creates zara"
    group = await run_activity(identity.ensure_group, inp, workflow_id=WORKFLOW)
    made = await zara(with_parent, "zara@elsewhere.example")
    await with_parent.reset_journal()
    step_input = inp.model_copy(update={"facts": group.facts})
    with pytest.raises(ApplicationError) as caught:
        await run_activity(identity.ensure_users, step_input, workflow_id=WORKFLOW)
    assert caught.value.type == "AdoptionRefused" and caught.value.non_retryable
    said = caught.value.message
    assert "Authentik user zara exists" in said and "approved plan does not adopt it" in said, said
    assert "adopt_existing: true" in said and "Fix: start the run again" in said, said
    assert await with_parent.writes() == 0, "nothing written, alice not created either"
    await with_parent.patch(f"/core/users/{made['pk']}/", {"email": "zara@tenant-foo.example"})
    users = await run_activity(identity.ensure_users, step_input, workflow_id=WORKFLOW)
    assert [r.outcome for r in users.results] == [Outcome.created, Outcome.updated], "her own account: proven"


@pytest.mark.parametrize("undo_by", ["rollback", "offboarding"])
async def test_giving_back_leaves_the_email_the_person_set_after_the_adoption(
    with_parent: IdentityLab, undo_by: str
) -> None:
    before = await zara(with_parent, "zara@elsewhere.example")
    contract = make_contract(usernames=("zara",), adopt=("zara",))
    inp = StepInput(contract=contract, run_id=WORKFLOW)
    approved = await adopt_lines(inp)
    group = await run_activity(identity.ensure_group, inp, workflow_id=WORKFLOW)
    inp = inp.model_copy(update={"facts": group.facts, "adoptions": approved})
    users = await run_activity(identity.ensure_users, inp, workflow_id=WORKFLOW)
    await with_parent.patch(f"/core/users/{before['pk']}/", {"email": "zara@moved.example"})  # her own edit
    undo = UndoInput(contract=contract, facts=users.facts, step="users", results=users.results)
    workflow, kind = WORKFLOW, "TenantOnboarding"
    if undo_by == "offboarding":  # no record of the onboarding's results: every user as a planned creation
        planned = [EnsureResult(layer="identity", kind="User", name="zara", outcome=Outcome.created)]
        undo = UndoInput(contract=contract, facts=Facts(), step="users", results=planned)
        workflow, kind = "offboard/tenant-foo", "TenantOffboarding"
    (undone,) = await run_activity(identity.undo, undo, workflow_id=workflow, workflow_type=kind)
    after = await with_parent.user("zara")
    assert (after["email"], after["name"], after["attributes"], after["groups"], after["is_active"]) == (
        "zara@moved.example",
        before["name"],
        before["attributes"],
        [],
        True,
    )
    left = undone.data_as(Restored).left_alone or []
    assert [line.split(", not the")[0] for line in left] == ["email: 'zara@moved.example'"], left
