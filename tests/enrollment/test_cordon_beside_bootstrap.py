"""Brownfield: the WorkerCluster is cordoned while ``konduktor worker bootstrap`` is still running, as the runbook's
second terminal does ("Bootstrap, then immediately cordon Hub dispatch"), not after the command returned.

The order is the lab's: each API server journals the requests it answered with one ``seq`` across both servers
(``lab/httpbase.py``). The stand-in's bootstrap waits for its registration (``lab/konduktor/registration.py``)
with list requests the worker's API server journals, the last one right before the command returns; a latency
fault keeps the command running a few seconds after the WorkerCluster appears, as a bootstrap on a slow link
does. The cordon is the Hub's journal of PATCHes of the WorkerCluster (the cordon's who-and-why record and
``konduktor cluster cordon`` itself): both must come before bootstrap's last request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.konduktor.registration import WAIT_ENV
from tenantflow.models.gates import GateAnswer
from tenantflow.models.status import RunStatus
from tests.enrollment.conftest import Lab, enrollment_worker, start_approved, wait_stage

WORKERCLUSTER = "/apis/trainy.ai/v1alpha1/namespaces/forecasting/workerclusters/forecasting-us"
REGISTRATION_WAIT = "/api/v1/namespaces/trainy-system/secrets"
SLOW_LINK_MS = 6000
BOTH = {"konduktor.bootstrap", "hub.cordon_on_appearance"}


async def both_done(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the run's status shows bootstrap and the cordon done (the run goes on to its convergence waits)."""
    for _ in range(600):
        status = await handle.query("status", result_type=RunStatus)
        if {s.name for s in status.steps if s.state == "done"} >= BOTH:
            return
        assert not {s.name for s in status.steps if s.state == "failed"} & BOTH, status.steps
        await asyncio.sleep(0.1)
    raise AssertionError(f"stuck at {status.stage}: {status.steps}")


async def test_the_cordon_lands_while_bootstrap_still_runs(
    dev_env: WorkflowEnvironment, brownfield: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WAIT_ENV, "60")
    brownfield.fault(
        "worker",
        [
            {
                "path": f"^{REGISTRATION_WAIT}$",
                "query": "fieldSelector",
                "methods": ["GET"],
                "latency_ms": SLOW_LINK_MS,
                "max_fires": 1,
            }
        ],
    )
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, brownfield.contract(brownfield=True), condition_budget_s=20)
        await wait_stage(handle, "gate:submissions_paused")
        await handle.execute_update("answer_gate", args=["submissions_paused", GateAnswer()])
        await both_done(handle)
        await handle.terminate("the order is observed; the rest of the enrollment is other tests' business")
    waits = [
        r
        for r in brownfield.requests("worker")
        if r["method"] == "GET" and r["path"] == REGISTRATION_WAIT and "fieldSelector" in r["query"]
    ]
    assert waits and waits[-1]["status"] == 200, "bootstrap waited for its registration"
    cordons = [r for r in brownfield.requests("hub") if r["method"] == "PATCH" and r["path"] == WORKERCLUSTER]
    assert len(cordons) >= 2 and all(r["status"] == 200 for r in cordons), cordons
    returned = waits[-1]["seq"]
    assert cordons[1]["seq"] < returned, (
        f"konduktor cluster cordon answered at #{cordons[1]['seq']}, bootstrap's last request at #{returned}"
    )
    wc = brownfield.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    assert wc["spec"]["cordoned"] is True
