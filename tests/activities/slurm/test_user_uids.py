"""Users slurmctld cannot resolve yet (nsscache behind LDAP), against the real slurmctld through its pod exec.

slurmctld records an association for an unknown user name without a uid and refuses that user's
jobs until ``scontrol reconfigure``: the users step waits for the names to resolve and repairs an
association recorded too early; validation reports one left behind.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.slurm import users as slurm_users
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input


@pytest.fixture
def stranger(lab: SlurmLab) -> Iterator[str]:
    """A user name slurmctld does not resolve yet, with an association in a scratch account."""
    name, account = f"zoe{secrets.token_hex(3)}", f"scratch-{secrets.token_hex(3)}"
    lab.sh("sacctmgr", "-i", "add", "account", account, "cluster=production")
    lab.sh("sacctmgr", "-i", "add", "user", name, f"account={account}")
    yield name
    lab.sh("sacctmgr", "-i", "delete", "user", name)
    lab.sh("sacctmgr", "-i", "delete", "account", account)


def test_an_association_recorded_before_the_user_resolves_is_looked_up_again(lab: SlurmLab, stranger: str) -> None:
    ctl = SlurmCtl.connect(lab.target)
    assert slurm_users.uidless(ctl, [stranger]) == [stranger]
    lab.resolve(stranger)
    assert slurm_users.resolve_user(ctl, stranger) is not None
    assert slurm_users.uidless(ctl, [stranger]) == [stranger], "slurmctld does not look a name up again by itself"
    assert slurm_users.ensure_uids(ctl, [stranger]) is True
    assert slurm_users.uidless(ctl, [stranger]) == []
    assert slurm_users.ensure_uids(ctl, [stranger]) is False


def test_waiting_for_a_user_that_never_resolves_is_a_retryable_error_naming_it(lab: SlurmLab) -> None:
    ctl = SlurmCtl.connect(lab.target)
    ghost = f"ghost{secrets.token_hex(3)}"
    with pytest.raises(ApplicationError) as refused:
        ActivityEnvironment().run(slurm_users.wait_resolved, ctl, [ghost], 1.0)
    assert refused.value.type == "Unavailable" and not refused.value.non_retryable
    assert ghost in refused.value.message and "nsscache" in refused.value.message


def test_users_step_waits_until_slurmctld_resolves_the_users(lab: SlurmLab) -> None:
    contract = make_contract(lab.target, users=(f"ann{secrets.token_hex(3)}", f"ben{secrets.token_hex(3)}"))
    inp = step_input(contract)
    done = [slurm.accounts(inp), slurm.qos(inp)]
    env = ActivityEnvironment()
    beats: list[object] = []
    env.on_heartbeat = lambda *details: beats.extend(details)
    later = threading.Timer(1.5, lab.resolve, args=contract.usernames)
    later.start()
    try:
        done.append(env.run(slurm.users, inp))
        ctl = SlurmCtl.connect(lab.target)
        assert slurm_users.uidless(ctl, contract.usernames) == []
        assert {"unresolved": contract.usernames} in beats
        assert [r.name for r in done[-1].results] == contract.usernames
    finally:
        later.join()
        for step, res in reversed(list(zip(("accounts", "qos", "users"), done, strict=False))):
            slurm.undo(slurm.UndoInput(contract=contract, facts=res.facts, step=step, results=res.results))


def test_the_most_users_the_contract_allows_are_asked_about_in_requests_an_apiserver_accepts(lab: SlurmLab) -> None:
    """500 users (``TenantContract.users`` allows no more) of the longest name (32 characters): named in one exec,
    the request line would be about 21 KB, which the apiserver's front refuses (8 KiB here, as in aiohttp and
    nginx); asked a batch at a time, every name is answered, the known one found."""
    ctl = SlurmCtl.connect(lab.target)
    known = f"kim{secrets.token_hex(3)}"
    lab.resolve(known)
    names = [f"u{n:03d}-{'x' * 27}" for n in range(499)] + [known]
    assert {len(name) for name in names[:-1]} == {32}
    assert slurm_users.unresolved(ctl, names) == names[:-1]
    assert slurm_users.uidless(ctl, names) == []
