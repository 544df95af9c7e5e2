"""SIGKILL the worker process between activities and inside long activities; the runs end as undisturbed ones do.

Kills between activities happen while the run waits at a gate (no task in
flight); a kill inside an activity is noticed by the server at the step's
heartbeat timeout, which then retries it on the new worker. The catalogue's
timeout is 60 s for every step (30 s for condition waits); the rig's worker
bounds it to :data:`BOUND_S` (``TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S``), which
each such kill costs, so the suite makes one per workflow (login.release, made
slow by a latency fault on its list of the login pods by label, and the
brownfield convergence wait).

Onboarding is compared with the session's undisturbed run of the same tenant
(the whole lab world, Slurm included: nothing lost, nothing duplicated);
brownfield enrollment with an undisturbed run on a second fresh lab (same
objects, running work untouched, presets adopted in place).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle

from tenantflow.activities.common.clusters import CLUSTERS_FILE_ENV
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.enrollment_workflows import WORKER_LABEL, EnrollmentInput, EnrollmentResult
from tenantflow.models.status import RunStatus
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer
from tests.chaos.conftest import Baseline, Rig, outcome, tenant
from tests.chaos.kit import (
    STATS,
    WorkerProcess,
    clear_faults,
    comparable,
    compare_worlds,
    running,
    set_faults,
    slow_login_release,
    wait_until,
    world,
)
from tests.enrollment.conftest import Lab, approve_printed_plan, start_lab
from tests.enrollment.test_brownfield import PRESET, uids

BOUND_S = 20
WORKLOAD_HASH = re.compile(r"-[0-9a-f]{5}$")


@pytest.mark.heartbeat_bound(BOUND_S)
async def test_onboarding_survives_sigkill_at_boundaries_and_mid_activity(
    rig: Rig, chaos_lab: LabEndpoints, baseline: Baseline
) -> None:
    scenario = STATS.scenario("worker SIGKILL at the plan gate and mid-activity")
    start = world(chaos_lab)
    assert comparable(start) == comparable(baseline.after), "the lab must hold the undisturbed run's tenant-foo"
    api = rig.api
    handle = await api.start_onboarding(tenant(chaos_lab))

    status = await api.wait_for_plan(handle.id)
    assert status.plan_hash
    rig.worker.restart_after_crash()
    await reviewer(api).approve(handle.id, status.plan_hash)

    # the lab holds tenant-foo's login pods Ready from the baseline run: only a slow list keeps the release in flight
    set_faults(chaos_lab, [slow_login_release(5000)], services=["kube-tenant-cluster"])
    await wait_until(api, handle, running("login.release"), what="login.release running")
    await asyncio.sleep(1.0)
    rig.worker.kill()
    clear_faults(chaos_lab)
    rig.worker.start()

    end = await outcome(api, handle.id)
    assert end == baseline.end
    compare_worlds(start, world(chaos_lab), scenario=scenario)
    STATS.runs_completed += 1
    scenario.outcome = end[0]


@pytest.fixture
def brownfield_labs(tmp_path: Path) -> Iterator[tuple[Lab, Lab]]:
    for name in ("undisturbed", "crashed"):
        (tmp_path / name).mkdir()
    undisturbed = start_lab(tmp_path / "undisturbed", brownfield=True)
    crashed = start_lab(tmp_path / "crashed", brownfield=True)
    yield next(undisturbed), next(crashed)
    for gen in (crashed, undisturbed):  # last started, first stopped: each restores the environment it found
        next(gen, None)


async def enroll(api: TenantflowClient, lab: Lab, workflow_id: str, crash: WorkerProcess | None) -> EnrollmentResult:
    """A brownfield enrollment started as the tester, every gate answered by the reviewer (enrollment is guarded by
    default); with ``crash``, SIGKILL the worker at three points."""
    arg = EnrollmentInput(contract=lab.contract(brownfield=True), condition_budget_s=30)
    handle: WorkflowHandle[Any, Any] = await api.client.start_workflow(
        "WorkerEnrollment",
        arg,
        id=workflow_id,
        task_queue=api.task_queue,
        result_type=EnrollmentResult,
        memo=await api.start_memo(workflow_id, "WorkerEnrollment", api.identity, arg),
    )
    approver = reviewer(api)

    async def gate(name: str) -> RunStatus:
        return await wait_until(api, handle, lambda s: s.stage == f"gate:{name}", what=f"gate {name}")

    status = await gate("approve_plan")
    await approver.approve(handle.id, status.plan_hash or "")
    await gate("submissions_paused")
    if crash:
        crash.restart_after_crash()
    await approver.answer_gate(handle.id, "submissions_paused")
    await approve_printed_plan(api, handle)
    if crash:
        await wait_until(
            api,
            handle,
            lambda s: running("worker.wait_convergence")(s) or s.stage.startswith("gate:approve_adoption"),
            what="convergence wait (or the adoption gate when convergence was quicker than a poll)",
        )
        crash.restart_after_crash()
    await gate("approve_adoption")
    if crash:
        crash.restart_after_crash()
    await approver.answer_gate(handle.id, "approve_adoption")
    await gate("uncordon")
    await approver.answer_gate(handle.id, "uncordon")
    await gate("resume_submissions")
    await approver.answer_gate(handle.id, "resume_submissions")
    result: EnrollmentResult = await handle.result()
    return result


def keys(lab: Lab) -> list[str]:
    """Every object of both clusters; a Kueue Workload by its owner's name, since Kueue appends a hash of the owner's
    uid (``jobframework.GetWorkloadNameForOwnerWithGVK``), which differs between the two labs."""
    return [
        f"{side}/{o['group']}/{o['resource']}/{o['namespace']}/"
        + (WORKLOAD_HASH.sub("", o["name"]) if o["resource"] == "workloads" else o["name"])
        for side, store in (("hub", lab.hub), ("worker", lab.worker))
        for o in store.snapshot()["objects"]
    ]


def serve_lab(worker: WorkerProcess, lab: Lab | None) -> None:
    """Restart the rig's worker with ``lab``'s cluster registry (its ``clusters.yaml`` names ``hub`` and ``worker``,
    overriding the chaos lab's contexts of the same names), or without one (``None``)."""
    worker.stop()
    if lab is None:
        worker.env.pop(CLUSTERS_FILE_ENV, None)
    else:
        worker.env[CLUSTERS_FILE_ENV] = str(lab.kubeconfig.parent / "clusters.yaml")
    worker.start()


@pytest.mark.heartbeat_bound(BOUND_S)
async def test_brownfield_enrollment_survives_sigkill(rig: Rig, brownfield_labs: tuple[Lab, Lab]) -> None:
    scenario = STATS.scenario("worker SIGKILL at three points of a brownfield enrollment")
    undisturbed, crashed = brownfield_labs
    before = uids(crashed)
    try:
        serve_lab(rig.worker, undisturbed)
        calm = await enroll(rig.api, undisturbed, "enroll/forecasting/chaos-calm", None)
        serve_lab(rig.worker, crashed)
        stormy = await enroll(rig.api, crashed, "enroll/forecasting/chaos-crash", rig.worker)
    finally:
        serve_lab(rig.worker, None)
    assert stormy.status == calm.status == "completed"
    assert len(stormy.adopted) == len(calm.adopted) == 5
    want, have = keys(undisturbed), keys(crashed)
    lost, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    duplicated = sorted({k for k in have if have.count(k) > 1})
    STATS.lost += len(lost)
    STATS.duplicated += len(extra) + len(duplicated)
    scenario.lost, scenario.duplicated = len(lost), len(extra) + len(duplicated)
    assert not lost and not extra and not duplicated, (lost, extra, duplicated)
    after = uids(crashed)
    assert {k: after[k] for k in before} == before, "running work was recreated"
    for resource, name, namespace in PRESET:
        labels = crashed.worker.get("kueue.x-k8s.io", resource, name, namespace)["metadata"]["labels"]
        assert labels[WORKER_LABEL] == "11-forecasting-forecasting-us"
    STATS.runs_completed += 2
    scenario.outcome = stormy.status
