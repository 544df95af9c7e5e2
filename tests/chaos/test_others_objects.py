"""What belongs to others stays theirs through a change of tenant-foo (issue 26, items 4, 6 and 7), against the whole
lab with a worker process.

The session's baseline tenant-foo (64 GPUs, eight nodes) is shrunk to 56 GPUs and grown back to 64 with
``TenantChange`` (what ``tenantflow apply`` starts), each plan approved; the world ends as it began:

* Before the shrink an administrator drains the tenant's last node with ``scontrol update nodename=<node>
  state=drain reason="RMA: GPU3"``: an idle node at the end of the list, the one a shrink that prefers idle nodes
  would give back. The shrink releases another node (drained, then resumed) and the RMA node keeps its drain and
  its reason (with the administrator's stamp) through the shrink and the grow.
* Before each change the platform rotates the LDAP bind password (the Secret ``auth/ldap-bind-creds``): to a new
  one before the shrink, back to the lab's before the grow. Each change updates the tenant's copy to the password of
  the moment, and the password it replaced is nowhere in the run's history (raw, and every payload decoded), its
  result, its status, any version of the tenant's record (decoded as stored: base64 of gzipped JSON) or the
  worker's log, as is or base64-encoded.
* The rig's worker gives up on an exec after 4 s (``TENANTFLOW_EXEC_TIMEOUT``). In the grow, ``slurm.accounts``
  raises the account's GrpTRES with ``sacctmgr -i modify account``; the lab holds that exec's handshake back for
  two seconds (a latency rule matching its command), in which slurmdbd is hung (SIGSTOP), so the command runs and
  waits past the exec timeout. Once the attempt has failed on the timeout, slurmdbd goes on and the waiting
  command commits. The step is retried (it reads before it writes), the run completes without a rollback and Slurm
  holds one account line with 64 GPUs, nothing duplicated.

Foreign objects touched: leaves of the world before the test that changed (none: the platform's Secret is back to
its password), and the RMA node if its state or reason changed.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, outcome, tenant
from tests.chaos.daemons import Pending, hung, named, pending
from tests.chaos.kit import (
    STATS,
    Scenario,
    clear_faults,
    comparable,
    compare_worlds,
    foreign_touched,
    set_faults,
    world,
)
from tests.chaos.test_adoption import kubectl
from tests.integration.world import RECORDS_NAMESPACE, world_snapshot
from tests.labfixture import lab_services
from tests.security.test_secrets_scan import forms, history_text

RMA = "RMA: GPU3"
BIND_SECRET = ("auth", "ldap-bind-creds")
"""The platform's LDAP bind Secret (namespace, name), which the login layer copies into the tenant namespace."""
EXEC_TIMEOUT_S = 4


def scontrol(lab: LabEndpoints, *args: str) -> str:
    """The real ``scontrol`` of the lab's Slurm, as an administrator on the host runs it."""
    env = {**os.environ, "SLURM_CONF": str(lab.slurm_conf)}
    return subprocess.run(["scontrol", *args], env=env, capture_output=True, text=True, check=True, timeout=60).stdout


def node_state(lab: LabEndpoints, node: str) -> tuple[frozenset[str], str]:
    """The flags of a node's ``State=`` (``IDLE+DRAIN``; without the ``*`` that only says its slurmd missed a ping
    on a busy host) and its ``Reason=`` (the rest of the line: the reason and its ``[user@time]`` stamp)."""
    line = scontrol(lab, "show", "node", node, "-o")
    state = line.partition(" State=")[2].split(" ", 1)[0]
    return frozenset(state.replace("*", "").split("+")), line.partition(" Reason=")[2].strip()


def partition_nodes(lab: LabEndpoints, partition: str) -> list[str]:
    env = {**os.environ, "SLURM_CONF": str(lab.slurm_conf)}
    argv = ["sinfo", "-h", "-N", "-p", partition, "-o", "%N"]
    listed = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60).stdout
    return sorted(set(listed.split()))


def secret_password(lab: LabEndpoints, namespace: str, name: str) -> str:
    data = json.loads(kubectl(lab, "-n", namespace, "get", "secret", name, "-o", "json"))["data"]
    return base64.b64decode(data["password"]).decode()


def rotate(lab: LabEndpoints, password: str, tmp_path: Path) -> None:
    """The platform rotates the bind password (a patch file: the password never in an argv)."""
    patch = tmp_path / "rotate.json"
    patch.write_text(json.dumps({"data": {"password": base64.b64encode(password.encode()).decode()}}))
    namespace, name = BIND_SECRET
    kubectl(lab, "-n", namespace, "patch", "secret", name, "--type", "merge", "--patch-file", str(patch))
    patch.unlink()


def records_text(lab: LabEndpoints, slug: str) -> str:
    """Every version of the tenant's record, raw and decoded as stored (the Secret's base64 of the payload, which is
    base64 of gzipped JSON)."""
    listed = json.loads(
        kubectl(lab, "-n", RECORDS_NAMESPACE, "get", "secrets", "-l", f"tenantflow.io/tenant={slug}", "-o", "json")
    )
    payloads = [
        gzip.decompress(base64.b64decode(base64.b64decode(i["data"]["record"]))).decode() for i in listed["items"]
    ]
    assert payloads, f"no record of {slug}"
    return "\n".join([json.dumps(listed), *payloads])


async def leaks(
    api: TenantflowClient, handle: WorkflowHandle[Any, Any], rig_log: Path, record: str, old: str
) -> list[str]:
    """Where the replaced password shows: the run's history, result and status, the tenant's record, the log."""
    sources = {
        "history": await history_text(api, handle),
        "result": (await api.result(handle.id)).model_dump_json(),
        "status": (await api.status(handle.id)).model_dump_json(),
        "record": record,
        "worker log": rig_log.read_text(),
    }
    return [where for where, text in sources.items() if any(form in text for form in forms(old))]


async def change(
    api: TenantflowClient, contract: TenantContract, previous: TenantContract
) -> tuple[WorkflowHandle[Any, Any], list[tuple[str, str]]]:
    """Start ``TenantChange`` from ``previous`` to ``contract`` and approve its plan; the handle and the plan's
    Node lines (name, action)."""
    handle = await api.start_change(contract, previous)
    status = await api.wait_for_plan(handle.id)
    assert status.plan is not None and status.plan_hash
    await reviewer(api).approve(handle.id, status.plan_hash)
    return handle, [(s.name, s.action.value) for s in status.plan.steps if s.kind == "Node"]


def injected_latency(lab: LabEndpoints, service: str) -> int:
    with httpx.Client(base_url=lab_services(lab)[service], verify=False, timeout=10) as http:
        injected: dict[str, int] = http.get("/_lab/requests").json()["injected"]
    return injected.get("latency", 0)


async def until_slowed(lab: LabEndpoints, service: str, handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until the lab holds a request back (its latency rule fired) while the run goes on."""
    while not injected_latency(lab, service):
        described = await handle.describe()
        assert described.status is not None and described.status.name == "RUNNING", "the run ended first"
        await asyncio.sleep(0.05)


async def exec_timed_out(api: TenantflowClient, handle: WorkflowHandle[Any, Any]) -> Pending:
    """The pending ``slurm.accounts`` once an attempt failed on the exec timeout (retried); fails at once if the run
    leaves the step instead: rolled back (a timeout taken for a failed command), or gone on (the write was done
    before slurmdbd hung)."""
    timed_out = f"no exit status within {EXEC_TIMEOUT_S} s"
    while True:
        found = await pending(handle, named("slurm.accounts"))
        if found is not None and timed_out in found.last_failure.message:
            return found
        status = await api.status(handle.id)
        assert status.stage == "apply:slurm.accounts", (
            f"slurm.accounts never failed on the exec timeout: {status.stage}"
        )
        await asyncio.sleep(0.05)


def settle(lines: list[Scenario], source: Scenario) -> None:
    """Every line of the test carries the world's counts."""
    for line in lines:
        line.lost, line.duplicated, line.foreign_touched = source.lost, source.duplicated, source.foreign_touched


@pytest.mark.exec_timeout(EXEC_TIMEOUT_S)
async def test_a_shrink_and_a_grow_leave_an_rma_drain_a_rotated_password_and_a_slow_sacctmgr_alone(
    rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline, tmp_path: Path
) -> None:
    drained, rotated, slow = lines = [
        STATS.scenario("node drained by an admin (RMA) in a tenant that shrinks and grows back"),
        STATS.scenario("LDAP bind password rotated, tenant re-applied: the old one in no history, result, record"),
        STATS.scenario("sacctmgr outlasting the exec timeout (slurmdbd hung): retried after a read, no rollback"),
    ]
    assert baseline.end[0] == "completed"
    full, api = tenant(chaos_lab), rig.api
    half = full.model_copy(update={"capacity": full.capacity.model_copy(update={"gpus": full.capacity.gpus - 8})})
    ours = (full.slug, full.slurm.team_account or full.slug, *full.usernames)
    nodes = partition_nodes(chaos_lab, full.slug)
    rma, lab_password, new_password = nodes[-1], chaos_lab.ldap_bind_password, secrets.token_urlsafe(18)
    assert len(nodes) == 8 and secret_password(chaos_lab, *BIND_SECRET) == lab_password
    start, before = world(chaos_lab), world_snapshot(chaos_lab)
    scontrol(chaos_lab, "update", f"nodename={rma}", "state=drain", f"reason={RMA}")
    admins = node_state(chaos_lab, rma)
    assert "DRAIN" in admins[0] and admins[1].split(" [")[0] == RMA, admins
    runs: list[WorkflowHandle[Any, Any]] = []
    try:
        rotate(chaos_lab, new_password, tmp_path)
        shrink, planned = await change(api, half, full)
        runs.append(shrink)
        state, message = await outcome(api, shrink.id)
        assert state == "completed", message
        [(released, action)] = planned
        assert action == "delete" and released != rma, planned
        assert partition_nodes(chaos_lab, full.slug) == [n for n in nodes if n != released]
        assert "DRAIN" not in node_state(chaos_lab, released)[0], "the released node is back in service"
        assert node_state(chaos_lab, rma) == admins, "the RMA drain and its reason are the admin's"
        assert secret_password(chaos_lab, full.namespace, BIND_SECRET[1]) == new_password, "the copy was updated"
        assert not await leaks(api, shrink, rig.log, records_text(chaos_lab, full.slug), lab_password)

        rotate(chaos_lab, lab_password, tmp_path)
        clear_faults(chaos_lab)
        write = r"command=modify&command=account&command=where&command=name(=|%3D)tenant-foo&.*GrpTRES"
        held = {"path": r"/exec$", "query": write, "latency_ms": 2000, "max_fires": 1}
        set_faults(chaos_lab, [held], services=["kube-tenant-cluster"])
        grow, _ = await change(api, full, half)
        runs.append(grow)
        await until_slowed(chaos_lab, "kube-tenant-cluster", grow)
        with hung(chaos_lab, "slurmdbd") as resume:
            timed_out = await exec_timed_out(api, grow)
            resume()
        state, message = await outcome(api, grow.id)
        assert state == "completed", message
        assert "modify account" in timed_out.last_failure.message, timed_out.last_failure.message
        account = next(
            r
            for r in (await api.result(grow.id)).applied
            if (r.layer, r.kind, r.name) == ("slurm", "account", full.slug)
        )
        STATS.notes.append(f"exec timeout: the retried slurm.accounts found the account {account.outcome.value}")
        status = await api.status(grow.id)
        assert status.stage == "completed" and not [s.name for s in status.steps if s.name.endswith(".undo")]
        assert partition_nodes(chaos_lab, full.slug) == nodes
        assert node_state(chaos_lab, rma) == admins, "the RMA drain and its reason are the admin's"
        assert secret_password(chaos_lab, full.namespace, BIND_SECRET[1]) == lab_password
        assert not await leaks(api, grow, rig.log, records_text(chaos_lab, full.slug), new_password)
    finally:
        clear_faults(chaos_lab)
        for run in runs:
            if await api.running(run.id):
                await run.terminate("the scenario failed")
        if secret_password(chaos_lab, *BIND_SECRET) != lab_password:
            rotate(chaos_lab, lab_password, tmp_path)
        now = node_state(chaos_lab, rma)
        if now != admins:
            drained.foreign_touched += 1
        if "DRAIN" in now[0]:
            scontrol(chaos_lab, "update", f"nodename={rma}", "state=resume")
    touched = foreign_touched(before, world_snapshot(chaos_lab), ours, drained)
    compare_worlds(start, world(chaos_lab), comparable, scenario=drained)
    assert not touched, "\n".join(touched)
    settle(lines, drained)
    STATS.runs_completed += 2
    drained.outcome = f"{rma} kept drained with its reason; {released} released and taken back"
    rotated.outcome = "copy updated twice, the replaced password nowhere"
    slow.outcome = "timed out, retried, completed"
