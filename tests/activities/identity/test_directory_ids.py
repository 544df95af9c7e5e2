"""Identity numbers unique across the directory, against the whole lab: a stale entry added by hand to the
lab's real slapd (``ldapadd``, in a tree of its own) holding a number a tenant entry gets or holds.

* At apply time the stale entry holds the uidNumber the tenant's next new user will get (users are created
  concurrently, so which of them gets it is not fixed; the test reads the name from the error): the run stops
  at ``identity.verify_ldap`` with a non-retryable ``IdentityCollision`` whose finding names both entries
  and the fix; the saga unwinds identity and nothing reaches Slurm or Weka.
* At plan time the stale entry holds the uidNumber of a user the run would adopt: preflight refuses.
* ``slurm.users``' wait for slurmctld to resolve users, when it gives up, names what the directory shows.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.slurm.users import unresolved_error
from tenantflow.lab.endpoints import LabEndpoints
from tests.integration.rollback_rig import assert_world_restored, failure_of, start_approved, tenant
from tests.integration.world import world_snapshot
from tests.labfixture import journal_writes, lab_env, lab_worker, reset_journals


def _authentik(lab: LabEndpoints) -> httpx.Client:
    return httpx.Client(
        base_url=f"{lab.authentik_url}/api/v3", timeout=10, headers={"Authorization": f"Bearer {lab.authentik_token}"}
    )


def uid_of_pk(lab: LabEndpoints, pk: int) -> int:
    with _authentik(lab) as ak:
        start: int = ak.get("/providers/ldap/").json()["results"][0]["uid_start_number"]
    return start + pk


def next_uid(lab: LabEndpoints) -> int:
    """The uidNumber Authentik's next user gets: a probe user's pk + 1 (pks are never reused)."""
    with _authentik(lab) as ak:
        probe = ak.post("/core/users/", json={"username": "uid-probe", "name": "probe"}).json()
        ak.delete(f"/core/users/{probe['pk']}/").raise_for_status()
    return uid_of_pk(lab, probe["pk"] + 1)


def _ldap(lab: LabEndpoints, tool: str, stdin: str) -> None:
    """Run ``ldapadd``/``ldapdelete`` as slapd's rootdn, the password read from its file (never in argv)."""
    argv = [
        tool,
        "-x",
        "-H",
        lab.ldap_url,
        "-D",
        f"cn=admin,{lab.ldap_base_dn}",
        "-y",
        str(lab.state_dir / "ldap" / "admin.password"),
    ]
    subprocess.run(
        argv, input=stdin, env={**os.environ, **lab.to_env()}, capture_output=True, text=True, timeout=30, check=True
    )


@contextmanager
def stale_entry(lab: LabEndpoints, name: str, uid_number: int) -> Iterator[str]:
    """A posixAccount outside the outpost's ou=users holding ``uid_number``; removed afterwards."""
    dn = f"uid={name},{lab.ldap_base_dn}"
    _ldap(
        lab,
        "ldapadd",
        f"dn: {dn}\nobjectClass: account\nobjectClass: posixAccount\nuid: {name}\ncn: {name}\n"
        f"uidNumber: {uid_number}\ngidNumber: {uid_number}\nhomeDirectory: /home/{name}\n",
    )
    try:
        yield dn
    finally:
        _ldap(lab, "ldapdelete", dn + "\n")


async def test_uid_held_by_a_stale_entry_stops_the_run_at_identity(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = tenant(lab, "uidclash")
    uid = next_uid(lab)
    with stale_entry(lab, "olduser-uidclash", uid) as stale:
        before = world_snapshot(lab)
        reset_journals(lab)
        async with lab_worker(dev_env.client, lab) as api:
            cause = await failure_of(await start_approved(api, contract))
        writes = journal_writes(lab)
        after = world_snapshot(lab)

    assert isinstance(cause, ActivityError) and cause.activity_type == "identity.verify_ldap", repr(cause)
    error = cause.cause
    assert isinstance(error, ApplicationError) and error.type == "IdentityCollision" and error.non_retryable
    held = [
        f"cn={name},ou=users,{lab.ldap_base_dn}"
        for name in contract.usernames
        if f"uidNumber {uid} of cn={name},ou=users,{lab.ldap_base_dn} is also held by {stale}" in error.message
    ]
    assert len(held) == 1, error.message
    user_dn = held[0]
    finding = error.details[0]
    assert finding["check"] == "identity.unique_ids" and not finding["ok"], finding
    assert user_dn in finding["message"] and stale in finding["message"], finding
    assert f"if {stale} is stale, remove it" in finding["fix"] and "uid start number" in finding["fix"], finding
    assert writes["weka"] == 0, writes
    assert after["slurm"] == before["slurm"] and after["weka"] == before["weka"]
    assert_world_restored(before, after, contract.usernames)


async def test_preflight_refuses_an_adopted_user_whose_uid_a_stale_entry_holds(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = tenant(lab, "adoptclash")
    user = contract.users[0]
    with _authentik(lab) as ak:
        created = ak.post("/core/users/", json={"username": user.username, "name": user.name}).json()
    try:
        uid = uid_of_pk(lab, created["pk"])
        with stale_entry(lab, "olduser-adoptclash", uid) as stale:
            reset_journals(lab)
            async with lab_worker(dev_env.client, lab) as api:
                cause = await failure_of(await api.start_onboarding(contract))
            writes = journal_writes(lab)
    finally:
        with _authentik(lab) as ak:
            ak.delete(f"/core/users/{created['pk']}/").raise_for_status()

    assert isinstance(cause, ApplicationError) and cause.type == "PreflightFailed", repr(cause)
    user_dn = f"cn={user.username},ou=users,{lab.ldap_base_dn}"
    assert f"identity.unique_ids: uidNumber {uid} of {user_dn} is also held by {stale}" in cause.message, cause.message
    assert sum(writes.values()) == 0, writes


def test_a_stuck_resolve_wait_names_the_cause_the_directory_shows(lab: LabEndpoints) -> None:
    with lab_env(lab):
        missing = unresolved_error(["nobody-here"], 60)
    assert missing.type == "Unavailable" and not missing.non_retryable, repr(missing)
    assert (
        "does not resolve user(s) nobody-here after 60 s: nobody-here is missing from the directory" in missing.message
    ), missing.message
    bind_dn = f"cn=ldap-bind,ou=users,{lab.ldap_base_dn}"
    uid = uid_of_pk(lab, 1)
    with lab_env(lab), stale_entry(lab, "olduser-bind", uid) as stale:
        collided = unresolved_error(["ldap-bind"], 60)
    assert collided.type == "IdentityCollision" and collided.non_retryable, repr(collided)
    assert f"uidNumber {uid} of {bind_dn} is also held by {stale}" in collided.message, collided.message
