"""Exact routing: with a second dispatch-ready pool member the canary proves this worker only when the other
member is cordoned for it (recorded who and why) and uncordoned right after."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.hub.cordon import CORDON_REASON, CORDONED_BY
from tenantflow.lab.kubeapi.store import ObjectKey
from tenantflow.models.enrollment_workflows import ORIGIN_LABEL
from tenantflow.models.gates import GateAnswer
from tests.enrollment.conftest import POOL_CONTEXT, POOL_MEMBER, Lab, enrollment_worker, start_approved, wait_stage


@pytest.mark.parametrize("exact", [True, False], ids=["exact-routing", "pool-routing"])
async def test_canary_routing(dev_env: WorkflowEnvironment, pool: Lab, exact: bool) -> None:
    holds: list[dict[str, str]] = []

    def record_hold(_event: str, key: ObjectKey, obj: dict[str, Any]) -> None:
        if key.name == POOL_MEMBER and key.resource == "workerclusters" and obj["spec"].get("cordoned"):
            holds.append(dict(obj["metadata"].get("annotations") or {}))

    pool.hub.subscribe(record_hold)
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(
            client, queue, pool.contract(brownfield=True, canary_exact_routing=exact), condition_budget_s=20
        )
        for gate in ("submissions_paused", "approve_adoption", "uncordon", "resume_submissions"):
            await wait_stage(handle, f"gate:{gate}")
            await handle.execute_update("answer_gate", args=[gate, GateAnswer()])
        result = await handle.result()
    [canary] = [f for f in result.findings if f.check == "canary"]
    landed = {
        name: [
            j["metadata"]["name"]
            for j in pool.stores[name].list("jobset.x-k8s.io", "jobsets", label_selector=ORIGIN_LABEL)
        ]
        for name in ("worker", POOL_CONTEXT)
    }
    member = pool.hub.get("trainy.ai", "workerclusters", POOL_MEMBER, "forecasting")
    assert member["spec"]["cordoned"] is False
    assert not {CORDONED_BY, CORDON_REASON} & set(member["metadata"].get("annotations") or {})
    if exact:
        assert landed == {"worker": ["canary-forecasting-us"], POOL_CONTEXT: []}
        assert canary.message.endswith("on forecasting-us"), "the Hub's Workload names the WorkerCluster it ran on"
        assert holds and holds[0][CORDONED_BY] == f"tenantflow {handle.id}"
        assert holds[0][CORDON_REASON] == "exact-routing canary for forecasting/forecasting-us"
    else:
        assert landed == {"worker": [], POOL_CONTEXT: ["canary-forecasting-us"]}
        assert canary.message.endswith(f"on {POOL_MEMBER}")
        assert not holds
