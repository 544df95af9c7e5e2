"""The CLI as scripts use it: ``--output json``, exit codes, gates and listing, against the dev server."""

from __future__ import annotations

import asyncio
import json

from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tests.starter.conftest import CLI, cli_env, tenantflow, tenantflow_json, unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import approved_onboarding, fake_worker, wait_for_stage


async def test_json_status_gates_list_and_exit_codes(fake_api: TenantflowClient) -> None:
    slug = unique_slug()
    handle = await fake_api.start_onboarding(example_tenant(slug))
    await wait_for_stage(fake_api, handle, "gate:approve_plan")

    status = await tenantflow_json(fake_api, "status", handle.id)
    assert status["stage"] == "gate:approve_plan"
    [gate] = status["gates"]
    assert gate["name"] == "approve_plan"
    assert f"tenantflow approve {handle.id} --plan-hash {status['plan_hash']}" in gate["how_to_answer"]

    code, _, err = await tenantflow(fake_api, "approve", handle.id, "--plan-hash", "0123456789abcdef")
    assert code == 4 and "stale or unknown plan hash" in err
    code, _, err = await tenantflow(fake_api, "uncordon", handle.id)
    assert code == 4, err
    code, _, err = await tenantflow(fake_api, "status", "tenant/no-such-run")
    assert code == 5, err
    code, _, err = await tenantflow(fake_api, "handover", slug)
    assert code == 4 and "has not finished" in err

    rows = await tenantflow_json(fake_api, "list", "--tenant", slug)
    assert [(r["id"], r["stage"]) for r in rows] == [(handle.id, "gate:approve_plan")]

    answer = await tenantflow_json(fake_api, "approve", handle.id, "--plan-hash", status["plan_hash"])
    assert answer["answer"].startswith(f"plan {status['plan_hash']} approved")
    outcome = await tenantflow_json(fake_api, "result", handle.id)
    assert outcome["status"] == "completed"
    sheet = await tenantflow_json(fake_api, "handover", slug)
    title, approvals = sheet["handover"]["markdown"].split("\n\n## Approvals\n\n")
    assert title.strip() == f"# {slug}"
    assert approvals.startswith(f"- approve_plan approved (plan {status['plan_hash']}) by "), approvals
    assert [a["gate"] for a in sheet["handover"]["approvals"]] == ["approve_plan"]
    code, out, _ = await tenantflow(fake_api, "handover", slug)
    assert code == 0 and f"# {slug}" in out


async def test_rejected_run_exits_3(fake_api: TenantflowClient) -> None:
    handle = await fake_api.start_onboarding(example_tenant(unique_slug()))
    await wait_for_stage(fake_api, handle, "gate:approve_plan")
    code, _, err = await tenantflow(fake_api, "reject", handle.id, "--reason", "not today")
    assert code == 0, err
    code, out, _ = await tenantflow(fake_api, "result", handle.id)
    assert code == 3 and "rejected" in out


async def test_a_step_failure_names_the_step_the_error_the_fix_and_the_rollback(dev_env: WorkflowEnvironment) -> None:
    """Issue 27's first acceptance check: a run failing at a step's non-retryable error -- ``tenantflow result``
    prints the step, the error's own message (not Temporal's ``Activity task failed``) and the fix; exit 3."""
    async with fake_worker(dev_env, FakeWorld(fail_at="kube.quota")) as api:
        handle = await approved_onboarding(api, example_tenant(unique_slug()))
        code, out, err = await tenantflow(api, "result", handle.id)
    assert code == 3, (out, err)
    lines = err.strip().splitlines()
    assert lines[0] == "run failed at step kube.quota: Invalid: injected failure at kube.quota", err
    [fix] = [line for line in lines if line.startswith("fix: ")]
    assert "tenantflow validate" in fix, fix
    [rollback] = [line for line in lines if line.startswith("rollback: ")]
    assert "undone" in rollback, rollback
    assert "Activity task failed" not in err
    code, out, _ = await tenantflow(api, "result", handle.id, "-o", "json")
    failure = json.loads(out)["failure"]
    assert code == 3 and (failure["step"], failure["error_type"], failure["stage"]) == (
        "kube.quota",
        "Invalid",
        "rolled-back",
    ), failure


async def test_cancel_asks_before_it_rolls_back(fake_api: TenantflowClient) -> None:
    """Issue 27: ``cancel`` asks before rolling a run back; anything but yes (or no answer at all) leaves the run
    going, exit 2; ``--yes`` cancels without asking."""
    handle = await fake_api.start_onboarding(example_tenant(unique_slug()))
    await wait_for_stage(fake_api, handle, "gate:approve_plan")
    for answer in (b"n\n", b""):
        proc = await asyncio.create_subprocess_exec(
            CLI,
            "cancel",
            handle.id,
            env=cli_env(fake_api),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate(answer)
        assert proc.returncode == 2, err
        assert "gate:approve_plan" in err.decode() and "not cancelled" in err.decode(), err
        assert await fake_api.running(handle.id)
    code, out, err = await tenantflow(fake_api, "cancel", handle.id, "--yes")
    assert code == 0 and f"cancel requested for {handle.id}" in out, err
    code, _, err = await tenantflow(fake_api, "result", handle.id)
    assert code == 3 and "Cancelled" in err, err
    code, _, err = await tenantflow(fake_api, "cancel", handle.id)
    assert code == 4 and "has already ended" in err, err
