"""Racing runs in the chaos rig: free nodes, two onboardings approved together, how a run settles, the tally.

A raced run may end (completed, failed, rejected) or stop at ``approve_plan`` again because the re-plan at apply
saw the other run's objects (:func:`settle`); :func:`tally` counts what a scenario lost, duplicated and touched
outside its own names once every winner is offboarded.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.approvers import reviewer
from tests.chaos.conftest import outcome
from tests.chaos.kit import Scenario, comparable, compare_worlds, foreign_touched, world
from tests.integration.world import World, world_snapshot


def free_nodes(lab: LabEndpoints) -> list[str]:
    """Ready, schedulable GPU nodes no tenant holds, by name (what ``kubectl get nodes`` shows)."""
    get = ["get", "nodes", "-l", "!reserved.tenant,node.kubernetes.io/instance-type", "-o", "json"]
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *get],
        env={**os.environ, **lab.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return sorted(
        n["metadata"]["name"]
        for n in json.loads(done.stdout)["items"]
        if not n["spec"].get("unschedulable")
        and {"type": "Ready", "status": "True"}.items()
        <= next((c for c in n["status"]["conditions"] if c["type"] == "Ready"), {}).items()
    )


async def settle(api: TenantflowClient, workflow_id: str, approved: str, timeout_s: float = 180) -> tuple[str, str]:
    """How an approved run settles: ``(state, message)`` when it ends, or ``("reopened", gate description)`` when
    it stops at ``approve_plan`` again with a plan hash other than ``approved``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while await api.running(workflow_id):
        status = await api.status(workflow_id)
        if status.stage.startswith("gate:approve_plan") and status.plan_hash not in (None, approved):
            return "reopened", " ".join(gate.description for gate in status.gates)
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{workflow_id} neither ended nor reopened its gate; stage {status.stage}")
        await asyncio.sleep(0.1)
    return await outcome(api, workflow_id)


async def race(api: TenantflowClient, contracts: list[TenantContract]) -> list[tuple[str, str]]:
    """Start every contract, approve their plans together, and return how each settled."""
    handles = await asyncio.gather(*(api.start_onboarding(c) for c in contracts))
    plans = await asyncio.gather(*(api.wait_for_plan(h.id) for h in handles))
    assert all(p.plan_hash for p in plans), [p.stage for p in plans]
    await asyncio.gather(*(reviewer(api).approve(h.id, p.plan_hash or "") for h, p in zip(handles, plans, strict=True)))
    return list(
        await asyncio.gather(*(settle(api, h.id, p.plan_hash or "") for h, p in zip(handles, plans, strict=True)))
    )


def mentioning(lines: list[str], words: tuple[str, ...]) -> list[str]:
    return [line for line in lines if any(word in line for word in words)]


@dataclass
class Before:
    """The world a scenario starts from: the chaos comparison view and the full snapshot for the foreign diff."""

    view: dict[str, Any]
    snapshot: World

    @classmethod
    def take(cls, lab: LabEndpoints) -> Before:
        return cls(world(lab), world_snapshot(lab))


def tally(scenario: Scenario, lab: LabEndpoints, before: Before, ours: tuple[str, ...]) -> None:
    """Once every winner is offboarded: nothing of the world before lost or duplicated (deactivated users and
    run records aside, as :func:`tests.chaos.kit.world` says) and nothing outside ``ours`` touched."""
    touched = foreign_touched(before.snapshot, world_snapshot(lab), ours, scenario)
    compare_worlds(before.view, world(lab), comparable, scenario=scenario)
    assert not touched, "\n".join(touched)
