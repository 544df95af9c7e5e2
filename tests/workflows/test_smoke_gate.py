"""A smoke check that finds an error stops the onboarding at ``smoke_failed`` with nothing rolled back (issue 23):
re-run after a fix completes it, ``rollback`` undoes the tenant as before, ``waive`` completes it with the waiver
and its reason on the handover sheet. ``tenantflow result`` shows the waiting gate and the findings with their fixes
(exit 4) and ``tenantflow smoke-failed`` answers it; the plain ``temporal`` CLI answers it by name."""

from __future__ import annotations

import json
import uuid

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.results import Severity
from tenantflow.models.status import StepState
from tests.starter.conftest import tenantflow
from tests.starter.test_temporal_cli import temporal
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import SMOKE_FIX, FakeWorld
from tests.workflows.harness import approved_onboarding, fake_worker, wait_for_stage

SINGLE_NODE = "smoke.single_node"


def slug() -> str:
    return f"tenant-s{uuid.uuid4().hex[:8]}"


def undos(world: FakeWorld) -> list[str]:
    return [call for call in world.calls if ".undo:" in call]


async def test_a_failed_smoke_check_waits_with_nothing_rolled_back_and_a_rerun_completes(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld(smoke_errors={SINGLE_NODE: 1})
    async with fake_worker(dev_env, world) as api:
        handle = await approved_onboarding(api, example_tenant(slug()))
        status = await wait_for_stage(api, handle, "gate:smoke_failed")
        [gate] = status.gates
        assert gate.name == "smoke_failed" and SINGLE_NODE in gate.description and SMOKE_FIX in gate.description
        assert f"tenantflow smoke-failed {handle.id} rerun" in gate.how_to_answer
        [error] = [f for f in status.findings if f.blocks]
        assert (error.check, error.fix) == (SINGLE_NODE, SMOKE_FIX)
        [row] = [r for r in status.steps if r.name == SINGLE_NODE]
        assert row.state is StepState.failed and "injected error finding" in row.error
        assert undos(world) == [], "nothing is rolled back while the gate waits"

        code, out, err = await tenantflow(api, "result", handle.id, "--output", "json")
        assert code == 4 and "waits at smoke_failed" in err, (out, err)
        shown = json.loads(out)
        assert shown["status"] == "waiting" and [g["name"] for g in shown["run"]["gates"]] == ["smoke_failed"]
        assert {(f["check"], f["fix"]) for f in shown["run"]["findings"] if not f["ok"]} == {(SINGLE_NODE, SMOKE_FIX)}
        code, out, err = await tenantflow(api, "result", handle.id)
        assert code == 4 and "waiting on gate smoke_failed" in out and SINGLE_NODE in out, (out, err)

        code, out, err = await tenantflow(api, "smoke-failed", handle.id, "rerun")
        assert code == 0 and "smoke_failed answered by" in out, (out, err)
        result = await handle.result()
        final = await api.status(handle.id)
    assert result.status == "completed"
    assert world.calls.count(SINGLE_NODE) == 2 and undos(world) == []
    assert [f for f in result.findings if f.blocks] == []
    assert [a.gate for a in result.approvals] == ["approve_plan", "smoke_failed"]
    assert [r.state for r in final.steps if r.name == SINGLE_NODE] == [StepState.done]


async def test_rollback_at_smoke_failed_undoes_the_tenant_naming_the_finding_and_its_fix(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld(smoke_errors={"smoke.storage": 1})
    async with fake_worker(dev_env, world) as api:
        handle = await approved_onboarding(api, example_tenant(slug()))
        await wait_for_stage(api, handle, "gate:smoke_failed")
        await api.answer_smoke_failed(handle.id, "rollback")
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        final = await api.status(handle.id)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "SmokeFailed"
    assert "smoke.storage" in cause.message and SMOKE_FIX in cause.message
    assert final.stage == "rolled-back" and "identity.undo:group" in undos(world)
    assert world.calls.count("smoke.storage") == 1


async def test_a_waiver_completes_the_run_with_its_reason_on_the_handover_sheet(dev_env: WorkflowEnvironment) -> None:
    world = FakeWorld(smoke_errors={"smoke.nccl": 1})
    reason = "ACS is being disabled fleet-wide next week; tenant accepts reduced busbw"
    async with fake_worker(dev_env, world) as api:
        handle = await approved_onboarding(api, example_tenant(slug()))
        await wait_for_stage(api, handle, "gate:smoke_failed")
        code, _, err = await tenantflow(api, "smoke-failed", handle.id, "waive")
        assert code == 2 and "--reason" in err, err
        await api.answer_smoke_failed(handle.id, "waive", reason)
        result = await handle.result()
    assert result.status == "completed" and world.calls.count("smoke.nccl") == 1 and undos(world) == []
    [kept] = [f for f in result.findings if f.check == "smoke.nccl"]
    assert kept.severity is Severity.warning and not kept.ok and reason in kept.message
    assert result.handover is not None
    entries = result.handover.sheet["smoke_waived"]
    assert isinstance(entries, list)
    [entry] = entries
    assert (entry["check"], entry["fix"], entry["reason"]) == ("smoke.nccl", SMOKE_FIX, reason)
    assert "## Smoke checks waived\n\n- smoke.nccl: injected error finding" in result.handover.markdown
    assert f"): {reason}\n" in result.handover.markdown


async def test_a_smoke_step_that_fails_to_run_waits_too_and_reruns_by_the_temporal_cli(
    dev_env: WorkflowEnvironment,
) -> None:
    world = FakeWorld(fail_at="smoke.nccl")
    async with fake_worker(dev_env, world) as api:
        handle = await approved_onboarding(api, example_tenant(slug()))
        status = await wait_for_stage(api, handle, "gate:smoke_failed")
        [error] = [f for f in status.findings if f.blocks]
        assert error.check == "smoke.nccl" and "Invalid: injected failure at smoke.nccl" in error.message
        assert "storage" in " ".join(r.name for r in status.steps), "the later smoke checks ran"
        world.fail_at = None
        update = ("workflow", "update", "execute", "--workflow-id", handle.id, "--name", "smoke_failed")
        assert "smoke_failed answered by ops" in await temporal(api, *update, "--input", '{"approver": "ops"}')
        result = await handle.result()
    assert result.status == "completed" and undos(world) == []
