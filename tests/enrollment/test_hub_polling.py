"""Hub waits back off (issue 24 item 6): a wait of seconds costs a handful of Hub requests, not ten a second,
heartbeats each answer it is still waiting on, and still sees the WorkerCluster once it appears."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.hub.steps import wait_conditions, wait_workercluster
from tenantflow.models.enrollment_workflows import ConditionWait
from tests.enrollment.conftest import Lab

WORKERCLUSTER = "/apis/trainy.ai/v1alpha1/namespaces/forecasting/workerclusters/forecasting-us"


def reads(lab: Lab) -> int:
    """GETs of the WorkerCluster the Hub served since the journal was cleared."""
    return sum(1 for r in lab.requests("hub") if r["method"] == "GET" and r["path"] == WORKERCLUSTER)


def test_waits_on_the_hub_back_off_and_heartbeat(no_agent: Lab) -> None:
    """Four seconds of waiting for a WorkerCluster that never appears: a constant 0.1 s poll reads it about 40
    times, the growing backoff (first 0.1 s, then half again, at most 2 s) at most 9; the conditions' wait (first
    0.5 s) at most 5. A slow machine only lowers the counts."""
    beats: list[object] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    wait = ConditionWait(contract=no_agent.contract(), conditions=["Registered"], budget_s=4)
    no_agent.requests("hub", clear=True)
    assert env.run(wait_workercluster, wait) is False
    appearance = reads(no_agent)
    assert 2 <= appearance <= 10, f"{appearance} reads of the WorkerCluster in a 4 s wait"
    assert len(beats) == appearance - 1, "a heartbeat after every answer but the last"
    no_agent.requests("hub", clear=True)
    assert not env.run(wait_conditions, wait).converged
    conditions = reads(no_agent)
    assert 2 <= conditions <= 6, f"{conditions} reads of the WorkerCluster in a 4 s wait for its conditions"


def test_a_backed_off_wait_still_sees_the_workercluster(no_agent: Lab) -> None:
    wait = ConditionWait(contract=no_agent.contract(), conditions=["Registered"], budget_s=60)
    no_agent.requests("hub", clear=True)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(ActivityEnvironment().run, wait_workercluster, wait)
        while reads(no_agent) < 3 and not waiting.done():
            time.sleep(0.2)
        no_agent.hub.create(
            {
                "apiVersion": "trainy.ai/v1alpha1",
                "kind": "WorkerCluster",
                "metadata": {"name": "forecasting-us", "namespace": "forecasting"},
                "spec": {"cordoned": False, "enrollment": "forecasting-us"},
            }
        )
        assert waiting.result(timeout=30) is True
