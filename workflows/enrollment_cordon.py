"""Brownfield enrollment's cordon beside bootstrap: the runbook's "Bootstrap, then immediately cordon Hub dispatch".

The runbook starts ``konduktor worker bootstrap`` and, "as soon as the WorkerCluster appears", cordons it from a
second terminal: registration creates the WorkerCluster uncordoned, so every second between its appearance and the
cordon is a window in which the Hub may dispatch to a worker whose old work is not verified yet. Under
:data:`CORDON_BESIDE_BOOTSTRAP_PATCH` ``WorkerEnrollment`` (``workflows/enrollment.py``) therefore runs
``hub.cordon_on_appearance`` (the second terminal) at the same time as the bootstrap, instead of waiting for the
WorkerCluster and cordoning after the whole bootstrap command returned (``hub.wait_workercluster`` then
``hub.cordon``: runs recorded before the patch, which keep that path).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_steps import HUB_CORDON_ON_APPEARANCE
    from tenantflow.models.enrollment_workflows import ConditionWait, EnrollmentStep
    from tenantflow.models.results import EnsureResult, Finding, Outcome

from tenantflow.workflows.run_state import RunState
from tenantflow.workflows.saga import root_message
from tenantflow.workflows.steps import StepTracker

STOPPED_NOT_CORDONED = "stopped-not-cordoned"
CORDON_BESIDE_BOOTSTRAP_PATCH = "brownfield-cordon-beside-bootstrap"
BOOTSTRAP_RUN_S = 300.0
"""How long the bootstrap command may run once answered (``konduktor.bootstrap``'s timeout before its plan gate held
the CLI at its prompt): the cordon's wait budget is this plus the condition budget, as recorded runs have it."""
"""Runs from before it cordoned only after ``konduktor.bootstrap`` returned."""
T = TypeVar("T")


async def cordon_beside(
    steps: StepTracker, step: EnrollmentStep, budget_s: float, bootstrap: Awaitable[T], ready: Callable[[], bool]
) -> tuple[T, str]:
    """Await ``bootstrap`` while ``hub.cordon_on_appearance`` cordons the WorkerCluster the moment it appears.

    Once bootstrap has returned, the cordon gets at most ``budget_s`` more (the run's condition budget, as the
    wait after bootstrap had before), then its wait is cancelled. Returns bootstrap's result and why the worker is
    NOT cordoned (empty when it is). A failing bootstrap cancels the wait and is raised as it came; a bootstrap
    still running is never cancelled because the cordon failed (the CLI is not interrupted half-way). The wait
    starts once ``ready()`` (the printed plan approved: a human may take hours at that gate, longer than the wait's
    own timeout, and nothing can register before the answer)."""
    target = f"{step.contract.tenant_namespace}/{step.contract.worker_name}"
    watch = ConditionWait(contract=step.contract, conditions=[], budget_s=BOOTSTRAP_RUN_S + budget_s)
    cordon = asyncio.ensure_future(_when(ready, lambda: steps.run(HUB_CORDON_ON_APPEARANCE, watch)))
    try:
        result = await bootstrap
    except BaseException:
        await _cancel(cordon)
        raise
    late = f"WorkerCluster {target} did not appear within {budget_s:.0f} s"
    if not cordon.done():
        try:
            await workflow.wait_condition(cordon.done, timeout=timedelta(seconds=budget_s))
        except TimeoutError:
            await _cancel(cordon)
            return result, late
    try:
        outcome = cordon.result().outcome
    except ActivityError as err:
        return result, f"cordoning WorkerCluster {target} failed: {root_message(err)}"
    return result, late if outcome == Outcome.absent else ""


async def _when(ready: Callable[[], bool], then: Callable[[], Awaitable[EnsureResult]]) -> EnsureResult:
    await workflow.wait_condition(ready)
    return await then()


async def _cancel(task: asyncio.Future[EnsureResult]) -> None:
    """Cancel the cordon's wait and let the cancel reach its activity (its ``ActivityError`` of the cancel, or a
    result that came first, is not looked at)."""
    task.cancel()
    await workflow.wait([task])


def stop_unless_cordoned(state: RunState, step: EnrollmentStep, why: str) -> None:
    """Stop at :data:`STOPPED_NOT_CORDONED` with a finding saying what to do, unless ``why`` is empty."""
    c = step.contract
    if not why:
        return
    fix = (
        f"keep every organization submission path paused; cordon it by hand as soon as it appears "
        f"(konduktor --context HUB cluster cordon {c.worker_name} -n {c.tenant_namespace}; check with "
        f"konduktor --context HUB cluster status {c.worker_name} -n {c.tenant_namespace}), then finish the "
        "runbook's brownfield steps or decommission the worker"
    )
    said = f"{why}: Hub dispatch to the worker is NOT cordoned"
    state.findings.append(Finding.failed("brownfield.cordon", said, fix))
    state.gates.set_stage(STOPPED_NOT_CORDONED, f"Stopped, submissions stay paused: {why}; {fix}")
    raise ApplicationError(
        f"{why}; Hub dispatch is not cordoned, keep submissions paused", type="CordonFailed", non_retryable=True
    )
