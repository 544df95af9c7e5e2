"""``tenantflow apply`` against the lab (issue 17): a tenant changed through the plan gate, over real sockets.

One tenant, onboarded with 16 GPUs and two users, then changed with ``tenantflow apply`` (the CLI as a subprocess)
and approved by plan hash: a user added while the display name, an SSH key, a user limit and a quota change in
place; a removal that fails validation rolled back (the user is back); the user
removed, first refused while a job of theirs runs (the job keeps running, the refusal names it), then removed once
it ended; the GPUs shrunk to 8 while a job runs on both nodes (the run drains the released node and waits, the job
completes: nothing is killed), then grown back to 16. Every change ends with validation passing and ``tenantflow
drift`` clean. A slug change is refused with the reason before anything starts. Each tenant is offboarded (data
purged) afterwards, whatever happened: its nodes are the lab's next tests' (the README block needs 8 of 16).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common import manifests
from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.slurm_cli import SlurmCtl, parse_keyvalues
from tenantflow.activities.slurm.partition import live_partition
from tenantflow.activities.slurm.users import resolve_user
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tests.approvers import reviewer
from tests.integration.runs import offboarded_after, onboard
from tests.integration.test_offboarding_e2e import small_tenant
from tests.labfixture import lab_worker
from tests.starter.conftest import tenantflow
from tests.starter.test_drift_lab import drift, named, remove_by_hand
from tests.workflows.contract import EXAMPLES
from tests.workflows.harness import wait_for_stage

CHANGE_TIMEOUT_S = 300
NAMES = ("uma", "vic", "wes")
"""The users of the users' tenant (tenant-chg); the capacity tenant (tenant-cap) has its own: usernames are global."""


def everyone(lab: LabEndpoints, slug: str = "tenant-chg", names: tuple[str, ...] = NAMES) -> TenantContract:
    """The tenant ``slug`` with every user the test gives it (the example's three users renamed ``names``)."""
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml")
    renamed = [
        user.model_copy(update={"username": name, "email": f"{name}@{slug}.example"})
        for user, name in zip(foo.users, names, strict=True)
    ]
    small = small_tenant(lab)
    slurm = small.slurm.model_copy(update={"team_account": f"ml-team-{slug.removeprefix('tenant-')}"})
    return small.model_copy(
        update={
            "slug": slug,
            "display_name": f"Tenant {slug.removeprefix('tenant-').title()}",
            "users": renamed,
            "slurm": slurm,
        }
    )


def fresh_key(comment: str) -> str:
    public = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    return f"{public.decode()} {comment}"


def in_place(contract: TenantContract) -> TenantContract:
    """What changes in place: the display name, uma's SSH key (rotated), a user limit and a Kubernetes quota."""
    rotated = [
        user.model_copy(update={"ssh_keys": [fresh_key("uma@new-laptop")]}) if user.username == "uma" else user
        for user in contract.users
    ]
    return contract.model_copy(
        update={
            "display_name": "Tenant Change Renamed",
            "users": rotated,
            "slurm": contract.slurm.model_copy(update={"user_max_jobs": contract.slurm.user_max_jobs + 5}),
            "kube_quota": contract.kube_quota.model_copy(update={"requests_cpu": "512"}),
        }
    )


def with_users(contract: TenantContract, names: list[str], everyone: TenantContract) -> TenantContract:
    return contract.model_copy(update={"users": [u for u in everyone.users if u.username in names]})


def with_gpus(contract: TenantContract, gpus: int) -> TenantContract:
    return contract.model_copy(update={"capacity": contract.capacity.model_copy(update={"gpus": gpus})})


async def apply(
    api: TenantflowClient, contract: TenantContract, tmp: Path, *args: str
) -> tuple[int, dict[str, Any], str]:
    """``tenantflow apply FILE -o json`` (the tenant's record read by the worker in the contract's cluster): exit
    code, the status it printed (plan and gate), stderr."""
    path = tmp / f"{contract.slug}-{contract.capacity.gpus}-{'-'.join(contract.usernames)}.json"
    path.write_text(contract.model_dump_json())
    code, out, err = await tenantflow(api, "apply", str(path), "-o", "json", *args)
    return code, (json.loads(out) if out.strip() else {}), err


async def approved(api: TenantflowClient, status: dict[str, Any]) -> OnboardingResult:
    """Approve the printed plan by its hash and wait for the change to finish."""
    workflow_id = f"tenant/{status['target']}"
    await reviewer(api).approve(workflow_id, status["plan_hash"])
    result: OnboardingResult = await asyncio.wait_for(
        api.client.get_workflow_handle(workflow_id, result_type=OnboardingResult).result(), CHANGE_TIMEOUT_S
    )
    assert result.status == "completed", result.message
    passed = {f.check for f in result.findings if f.ok}
    assert {"reservation.partition_nodes", "identity.group_members", "login.authorized_keys"} <= passed, passed
    return result


def planned(status: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(s["layer"], s["kind"], s["name"], s["action"]) for s in status["plan"]["steps"]}


async def drift_clean(api: TenantflowClient, lab: LabEndpoints, slug: str) -> None:
    code, report = await drift(api, lab, slug)
    assert (code, named(report, slug)) == (0, set()), report


@pytest.fixture
def hold() -> Iterator[Path]:
    """A directory every user can read (under /tmp: pytest's own is private to root): a held job waits there until
    the test creates ``release`` in it."""
    with tempfile.TemporaryDirectory(prefix="tf-hold-", dir="/tmp") as name:
        os.chmod(name, 0o755)
        yield Path(name)


def submit_held(contract: TenantContract, user: str, hold: Path, nodes: int) -> str:
    """A job of ``user`` on ``nodes`` nodes of the tenant's partition that runs until ``hold/release`` exists."""
    ctl = SlurmCtl.connect(contract.cluster)
    account = resolve_user(ctl, user)
    assert account is not None, f"{user} does not resolve on the Slurm nodes"
    argv = [
        "sbatch",
        "--parsable",
        f"--uid={account.uid}",
        f"--gid={account.gid}",
        f"--chdir={hold}",
        f"--partition={contract.slug}",
        f"--account={contract.user_account}",
        f"--nodes={nodes}",
        "--output=/dev/null",
        "--time=00:10:00",
        "--wrap",
        f"while [ ! -e {hold}/release ]; do sleep 1; done",
    ]
    return ctl.run(argv).stdout.strip().split(";")[0]


def job_state(contract: TenantContract, job: str) -> str:
    out = SlurmCtl.connect(contract.cluster).run(["scontrol", "show", "job", job, "-o"]).stdout
    return parse_keyvalues(out.replace(" ", "\n")).get("JobState", "")


async def until_state(contract: TenantContract, job: str, states: set[str]) -> str:
    for _ in range(600):
        state = await asyncio.to_thread(job_state, contract, job)
        if state in states:
            return state
        await asyncio.sleep(0.5)
    raise AssertionError(f"job {job} never reached {states}")


def node_state(contract: TenantContract, node: str) -> str:
    out = SlurmCtl.connect(contract.cluster).run(["sinfo", "-h", "-N", "-n", node, "-o", "%t"]).stdout
    return out.split()[0] if out.split() else ""


def account_of(user: str) -> tuple[bool, list[str]]:
    with AuthentikClient.from_settings() as ak:
        found = ak.users.named(user)
        assert found is not None
        return found.is_active, [g.name for g in found.groups_obj or []]


@pytest.mark.timeout(600)
async def test_apply_adds_and_removes_users_and_changes_in_place_without_killing_jobs(
    dev_env: WorkflowEnvironment, lab: LabEndpoints, tmp_path: Path, hold: Path
) -> None:
    three = everyone(lab)
    contract = with_users(three, ["uma", "vic"], three)
    async with lab_worker(dev_env.client, lab) as api, offboarded_after(api, contract.cluster, contract.slug):
        onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message

        code, _, err = await apply(
            api, contract.model_copy(update={"slug": "tenant-chg2"}), tmp_path, "--tenant", contract.slug
        )
        assert code == 2 and "cannot become" in err and "offboard" in err, err

        added = in_place(three)
        code, status, err = await apply(api, added, tmp_path)
        assert code == 0, err
        assert {("identity", "User", "wes", "create"), ("slurm", "user", "wes", "create")} <= planned(status)
        updates = {(layer, kind, name) for layer, kind, name, action in planned(status) if action == "update"}
        assert {
            ("identity", "User", "uma"),
            ("slurm", "account", contract.slug),
            ("slurm", "user", "vic"),
            ("kube", "ResourceQuota", manifests.resource_quota(added)["metadata"]["name"]),
        } <= updates, updates
        await approved(api, status)
        await drift_clean(api, lab, contract.slug)
        contract = with_users(added, ["uma", "vic"], added)

        await removal_rolled_back(api, lab, added, contract, tmp_path)

        job = await asyncio.to_thread(submit_held, added, "wes", hold, 1)
        assert await until_state(added, job, {"RUNNING"}) == "RUNNING"
        code, _, err = await apply(api, contract, tmp_path)
        assert code == 3 and "change.user_jobs" in err and job in err, err
        assert job_state(added, job) == "RUNNING", "the refused change killed nothing"
        (hold / "release").touch()
        assert await until_state(added, job, {"COMPLETED", "CANCELLED", "FAILED"}) == "COMPLETED"

        code, status, err = await apply(api, contract, tmp_path)
        assert code == 0, err
        assert {("identity", "User", "wes", "delete"), ("slurm", "user", "wes", "delete")} <= planned(status)
        await approved(api, status)
        assert account_of("wes") == (False, []), "deactivated and out of the group, not deleted"
        await drift_clean(api, lab, contract.slug)


@pytest.mark.timeout(600)
async def test_apply_shrinks_onto_a_busy_node_without_killing_its_job_and_grows_back(
    dev_env: WorkflowEnvironment, lab: LabEndpoints, tmp_path: Path, hold: Path
) -> None:
    contract = everyone(lab, "tenant-cap", ("xia", "yan", "zed"))
    async with lab_worker(dev_env.client, lab) as api, offboarded_after(api, contract.cluster, contract.slug):
        onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message
        await shrink_and_grow(api, lab, contract, tmp_path, hold)


def intrude(contract: TenantContract, intruder: str) -> None:
    """A member of the tenant's group the contract does not list, added by hand: validation fails while it is there."""
    with AuthentikClient.from_settings() as ak:
        user = ak.users.create({"username": intruder, "name": "Added By Hand", "email": f"{intruder}@example.org"})
        group = ak.groups.named(contract.slug)
        assert group is not None
        ak.add_user(group.pk, user.pk)


def association(contract: TenantContract, user: str) -> bool:
    out = SlurmCtl.connect(contract.cluster).show(
        "assoc", {"users": user, "accounts": contract.user_account}, ("user",)
    )
    return user in out.split()


async def removal_rolled_back(
    api: TenantflowClient, lab: LabEndpoints, current: TenantContract, target: TenantContract, tmp: Path
) -> None:
    """A change that removes wes and then fails validation (a member added by hand) rolls back: wes is back in
    Slurm and the group, active; the world matches the recorded contract again but for that member."""
    intruder = "mallory-chg"
    await asyncio.to_thread(intrude, current, intruder)
    code, status, err = await apply(api, target, tmp)
    assert code == 0, err
    await reviewer(api).approve(f"tenant/{target.slug}", status["plan_hash"])
    handle = api.client.get_workflow_handle(f"tenant/{target.slug}", result_type=OnboardingResult)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), CHANGE_TIMEOUT_S)
    assert "identity.group_members" in str(failed.value.cause), failed.value.cause
    assert (await api.status(handle.id)).stage == "rolled-back"
    assert account_of("wes") == (True, [current.slug]) and association(current, "wes"), "wes is back"
    code, report = await drift(api, lab, current.slug)
    assert named(report, current.slug) == {("identity", "GroupMember", intruder, "extra")}, report
    await asyncio.to_thread(remove_by_hand, current, intruder)


async def shrink_and_grow(
    api: TenantflowClient, lab: LabEndpoints, contract: TenantContract, tmp: Path, hold: Path
) -> None:
    """16 -> 8 GPUs while a job holds both nodes: the released node is drained and waited for; then back to 16."""
    job = await asyncio.to_thread(submit_held, contract, contract.usernames[0], hold, 2)
    assert await until_state(contract, job, {"RUNNING"}) == "RUNNING"
    half = with_gpus(contract, 8)
    code, status, err = await apply(api, half, tmp)
    assert code == 0, err
    [released] = [s for s in status["plan"]["steps"] if s["kind"] == "Node" and s["action"] == "delete"]
    assert job in released["detail"]["wait_for_jobs"], released
    await reviewer(api).approve(f"tenant/{contract.slug}", status["plan_hash"])
    handle = api.client.get_workflow_handle(f"tenant/{contract.slug}", result_type=OnboardingResult)
    waiting = await wait_for_stage(api, handle, "apply:change.wait_drained", timeout_s=120)
    [step] = [s for s in waiting.steps if s.name == "change.wait_drained"]
    assert step.state == "running" and released["name"] in step.summary and "none is killed" in step.summary
    assert job_state(contract, job) == "RUNNING"
    assert node_state(contract, released["name"]) in ("drng", "drain", "drng*"), "drained, not killed"
    (hold / "release").touch()
    assert await until_state(contract, job, {"COMPLETED", "CANCELLED", "FAILED"}) == "COMPLETED"
    result = await asyncio.wait_for(handle.result(), CHANGE_TIMEOUT_S)
    assert result.status == "completed", result.message
    part = live_partition(SlurmCtl.connect(contract.cluster), half)
    assert part is not None and released["name"] not in part.nodes and len(part.nodes) == 1
    # resumed: not drained any more; a trailing * only says its slurmd missed slurmctld's last ping (a busy host)
    assert node_state(contract, released["name"]) in ("idle", "idle*"), "the released node is resumed"
    await drift_clean(api, lab, contract.slug)

    code, status, err = await apply(api, contract, tmp)
    assert code == 0, err
    assert ("capacity", "Reservation", contract.reservation_name, "update") in planned(status)
    await approved(api, status)
    part = live_partition(SlurmCtl.connect(contract.cluster), contract)
    assert part is not None and len(part.nodes) == 2
    await drift_clean(api, lab, contract.slug)
