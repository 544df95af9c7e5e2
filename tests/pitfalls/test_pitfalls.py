"""The runbook's "What could go wrong" items, each switched on in the lab, must be reported by name with the fix.

One whole lab for the module. Each case switches one pitfall on where it would happen on a real cluster
(:mod:`lab.pitfalls`), onboards a small tenant of its own (two nodes, one user), and checks that the run does
not end completed and that its failure names the finding and the runbook's fix; the failed run's rollback
cleans up, and the switch goes off again. A pitfall that fails a smoke check stops the run at ``smoke_failed``
with nothing rolled back (issue 23): the reviewer rolls it back there, or, for a pitfall validation names
(``gid_mismatch`` fails the storage job too), waives the smoke failures so that validation runs;
``no_constrain_devices`` is fixed (switched off) while the run waits, and the smoke checks re-run until it
completes. With every switch off, the same onboarding completes and is offboarded. The table (pitfall, how
injected, what tenantflow reported) is printed and written to ``<lab>/pitfalls-table.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.lab import pitfalls
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.pitfalls import Pitfall
from tenantflow.models.status import RunStatus, StepState
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant
from tenantflow.workflows.smoke_gate import SMOKE_FAILED
from tests.approvers import reviewer
from tests.integration.runs import approved, offboard, onboard
from tests.labfixture import lab_env, lab_worker, whole_lab
from tests.workflows.contract import EXAMPLES
from tests.workflows.harness import wait_for_stage

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOsy1rAIiq4ryoQ4NeggdPKt8jjkGpiakSHAYtmHSX2L p@lab"
EXPECTED: dict[Pitfall, tuple[str, str]] = {
    Pitfall.gid_mismatch: ("identity.uid_gid", "same property mapping"),
    Pitfall.wrong_node_labels: ("kube.binding_selector", "app.kubernetes.io/managed-by"),
    Pitfall.acs_on: ("smoke.nccl", "ACS disable runbook"),
    Pitfall.no_constrain_devices: ("smoke.single_node", "ConstrainDevices=yes"),
    Pitfall.scratch_missing: ("smoke.storage", "volumeMount"),
    Pitfall.short_max_time: ("slurm.max_time", "MaxTime=UNLIMITED"),
    Pitfall.evict_on_release: ("capacity.evict_on_release", "evictOnRelease=false so the operator drains"),
    Pitfall.keys_empty: ("login.authorized_keys", "restart the login pod"),
    Pitfall.outpost_throttled: ("login.getent_passwd", "raise the nslcd cache TTL"),
}
TABLE: list[tuple[str, str, str]] = []
BIND_SECRET = "ldap-bind-creds"
FIXED_WHILE_WAITING = Pitfall.no_constrain_devices
"""The pitfall fixed while its run waits at ``smoke_failed``; the smoke checks then re-run."""
SMOKE_WAIT_S = 900
"""How long an onboarding may take to reach the smoke checks' verdict in the lab."""


@pytest.fixture(scope="module")
def pitfall_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """A lab of its own, so no switch can leak into other tests; prints the table at the end."""
    for lab in whole_lab(tmp_path_factory, "pitfalls"):
        yield lab
        if TABLE:
            table = render_table()
            (lab.state_dir / "pitfalls-table.md").write_text(table)
            sys.stdout.write("\n" + table)


def render_table() -> str:
    rows = ["| pitfall | how injected | what tenantflow reported |", "|---|---|---|"]
    rows += [f"| {name} | {how} | {' '.join(said.replace('|', '/').split())} |" for name, how, said in TABLE]
    return "\n".join(rows) + "\n"


def contract_for(lab: LabEndpoints, tag: str) -> TenantContract:
    base = load_tenant(EXAMPLES / "tenant-foo.yaml")
    slug = f"tenant-{tag.replace('_', '-')}"[:30].rstrip("-")
    user = f"{tag.replace('_', '-')[:20].rstrip('-')}-u1"
    data = base.model_dump(mode="json")
    data.update(
        slug=slug,
        display_name=f"Pitfall {tag.replace('_', ' ')}",
        users=[{"username": user, "email": f"{user}@example.org", "name": "Pitfall User", "ssh_keys": [KEY]}],
    )
    data["capacity"] |= {"gpus": 16}
    data["slurm"] |= {
        "team_account": f"team-{slug.removeprefix('tenant-')}"[:30].rstrip("-"),
        "budget_gpu_minutes_total": 240000,
    }
    return TenantContract.model_validate(data)


def failure_text(error: BaseException) -> str:
    """The messages of a failure and its causes (an activity's ApplicationError sits below ActivityError)."""
    texts = []
    cause: BaseException | None = error
    while cause is not None:
        texts.append(str(getattr(cause, "message", "") or cause))
        cause = cause.__cause__ or getattr(cause, "cause", None)
    return " <- ".join(texts[1:] or texts)


def tenantflow(dev_env: WorkflowEnvironment, api_queue: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``tenantflow`` command, as an operator runs it beside the worker."""
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "TENANTFLOW_TASK_QUEUE": api_queue,
    }
    return subprocess.run(
        [str(Path(sys.executable).parent / "tenantflow"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def handover_exit_code(dev_env: WorkflowEnvironment, api_queue: str, slug: str) -> int:
    """``tenantflow handover <slug>``, as an operator would ask after the run; in a thread, so that the worker of
    this event loop can run the ``TenantRecords`` read the command asks it for."""
    return (await asyncio.to_thread(tenantflow, dev_env, api_queue, "handover", slug)).returncode


async def test_all_switches_off_is_a_clean_run(dev_env: WorkflowEnvironment, pitfall_lab: LabEndpoints) -> None:
    assert pitfalls.active(pitfall_lab.state_dir) == frozenset()
    contract = contract_for(pitfall_lab, "clean")
    async with lab_worker(dev_env.client, pitfall_lab) as api:
        result = await onboard(api, contract)
        try:
            assert result.status == "completed", result.message
            assert [f for f in result.findings if not f.ok and f.severity == "error"] == []
            assert await handover_exit_code(dev_env, api.task_queue, contract.slug) == 0
        finally:
            await offboard(api, contract, purge=True)
    TABLE.append(("(none)", "every switch off", "completed, no error finding, handover exit 0"))


async def failed_run(
    dev_env: WorkflowEnvironment,
    lab: LabEndpoints,
    contract: TenantContract,
    name: str,
    how: str,
    smoke: bool = False,
) -> tuple[str, int]:
    """Onboard ``contract`` expecting the run to fail: its failure text and ``tenantflow handover``'s exit code,
    recorded in the table. A run that stops at ``smoke_failed`` (nothing rolled back) is rolled back there by the
    reviewer when the pitfall is a smoke check's (``smoke``); a pitfall that breaks the smoke jobs too but is named
    by validation gets its smoke failures waived, so that validation runs and names it."""
    stopped = ""
    async with lab_worker(dev_env.client, lab) as api:
        with pytest.raises(WorkflowFailureError) as failed:
            handle = await approved(api, contract)
            outcome = await api.result_unless_waiting(handle.id, (SMOKE_FAILED,), refresh_s=1)
            assert isinstance(outcome, RunStatus), f"{name}: the run completed"
            stopped = "; ".join(f"{f.check}: {f.message}" for f in outcome.findings if f.blocks)
            answer = reviewer(api)
            if smoke:
                await answer.answer_smoke_failed(handle.id, "rollback")
            else:
                await answer.answer_smoke_failed(handle.id, "waive", "so that validation names the pitfall")
            await handle.result()
        exit_code = await handover_exit_code(dev_env, api.task_queue, contract.slug)
    message = failure_text(failed.value)
    then = "rolled back" if smoke else "waived"
    waited = f"waited at smoke_failed ({stopped[:200]}), then {then}; " if stopped else ""
    TABLE.append((name, how, f"{waited}exit {exit_code}: {message[:400]}"))
    return message, exit_code


@pytest.mark.parametrize("pitfall", [p for p in EXPECTED if p is not FIXED_WHILE_WAITING], ids=str)
async def test_a_pitfall_switched_on_is_reported_by_name_with_the_fix(
    dev_env: WorkflowEnvironment, pitfall_lab: LabEndpoints, pitfall: Pitfall
) -> None:
    check, fix = EXPECTED[pitfall]
    contract = contract_for(pitfall_lab, pitfall.value)
    pitfalls.switch(pitfall_lab.state_dir, pitfall, True)
    try:
        message, exit_code = await failed_run(
            dev_env, pitfall_lab, contract, pitfall.value, pitfalls.INJECTED[pitfall], check.startswith("smoke.")
        )
    finally:
        pitfalls.switch(pitfall_lab.state_dir, pitfall, False)
    assert check in message and fix in message, message
    assert exit_code == 3
    assert_rolled_back(pitfall_lab, contract)


async def test_the_ldap_bind_secret_in_the_wrong_namespace_is_reported_by_name_with_the_fix(
    dev_env: WorkflowEnvironment, pitfall_lab: LabEndpoints
) -> None:
    """Runbook: the bind Secret the chart reads is not where it should be. Injected as an operator misplaces it
    (moved through the API from auth to slurm-control): preflight names it with the fix and nothing is written."""
    contract = contract_for(pitfall_lab, "bind_secret")
    with lab_env(pitfall_lab):  # this process moves the Secret through the lab's registered cluster
        objs = KubeObjects(contract.cluster)
        secret = objs.get("Secret", BIND_SECRET, "auth")
        assert secret is not None

        def copy_to(namespace: str) -> None:
            meta = {"name": BIND_SECRET, "namespace": namespace, "labels": secret["metadata"].get("labels") or {}}
            objs.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": secret.get("data") or {}})

        copy_to("slurm-control")
        objs.delete("Secret", BIND_SECRET, "auth")
        try:
            message, exit_code = await failed_run(
                dev_env,
                pitfall_lab,
                contract,
                "bind_secret_namespace",
                "Secret ldap-bind-creds moved from auth to slurm-control",
            )
        finally:
            copy_to("auth")
            objs.delete("Secret", BIND_SECRET, "slurm-control")
    assert "kube.ldap_bind_secret" in message and "never put the password in chart values" in message, message
    assert exit_code == 3
    assert_rolled_back(pitfall_lab, contract)


def slurm_objects(lab: LabEndpoints, contract: TenantContract) -> tuple[str, str, int]:
    """The tenant's Slurm account and QoS as ``sacctmgr`` lists them, and ``scontrol show partition``'s exit code."""
    env = {**os.environ, **lab.to_env()}

    def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=check)

    accounts = run(["sacctmgr", "-n", "-P", "show", "account", contract.slug, "format=account"]).stdout
    qos = run(["sacctmgr", "-n", "-P", "show", "qos", contract.normal_qos_name, "format=name"]).stdout
    partition = run(["scontrol", "show", "partition", contract.slug], check=False)
    return accounts.strip(), qos.strip(), partition.returncode


def assert_rolled_back(lab: LabEndpoints, contract: TenantContract) -> None:
    """The failed run's rollback left no Slurm account, QoS or partition of the tenant behind."""
    assert slurm_objects(lab, contract) == ("", "", 1)


async def test_a_smoke_failure_waits_at_smoke_failed_and_a_rerun_after_the_fix_completes(
    dev_env: WorkflowEnvironment, pitfall_lab: LabEndpoints
) -> None:
    """Issue 23: with ``ConstrainDevices`` missing the onboarding waits at ``smoke_failed`` with the finding and its
    fix in ``status`` and ``result`` (exit 4), and nothing is rolled back; once the switch is off (the cgroup.conf
    fixed), re-running the smoke checks completes the run."""
    pitfall = FIXED_WHILE_WAITING
    check, fix = EXPECTED[pitfall]
    contract = contract_for(pitfall_lab, pitfall.value)
    pitfalls.switch(pitfall_lab.state_dir, pitfall, True)
    try:
        async with lab_worker(dev_env.client, pitfall_lab) as api:
            handle = await approved(api, contract)
            status = await wait_for_stage(api, handle, "gate:smoke_failed", timeout_s=SMOKE_WAIT_S)
            errors = {f.check: f for f in status.findings if f.blocks}
            assert check in errors and fix in errors[check].fix, status.findings
            assert any(r.name == check and r.state is StepState.failed for r in status.steps), status.steps
            # in a thread: the worker answering the command's status queries runs on this event loop
            shown = await asyncio.to_thread(tenantflow, dev_env, api.task_queue, "result", handle.id, "-o", "json")
            assert shown.returncode == 4, shown.stderr
            waiting = json.loads(shown.stdout)["run"]
            assert [g["name"] for g in waiting["gates"]] == ["smoke_failed"]
            assert any(f["check"] == check and fix in f["fix"] for f in waiting["findings"]), waiting["findings"]
            assert slurm_objects(pitfall_lab, contract) == (contract.slug, contract.normal_qos_name, 0)

            pitfalls.switch(pitfall_lab.state_dir, pitfall, False)
            await reviewer(api).answer_smoke_failed(handle.id, "rerun")
            result = await handle.result()
            try:
                assert result.status == "completed", result.message
                assert [f for f in result.findings if f.blocks] == []
                assert [a.gate for a in result.approvals] == ["approve_plan", "smoke_failed"]
            finally:
                await offboard(api, contract, purge=True)
    finally:
        pitfalls.switch(pitfall_lab.state_dir, pitfall, False)
    said = f"waited at smoke_failed ({check}: fix {fix}), nothing rolled back; switched off, rerun: completed"
    TABLE.append((pitfall.value, pitfalls.INJECTED[pitfall], said))
