"""Helpers of the capacity, Kubernetes and login layer tests: the example contract on the lab, running an activity."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.capacity import steps as capacity
from tenantflow.activities.kube import steps as kube
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.results import EnsureResult
from tenantflow.models.tenant import TenantContract
from tests.activities.kube.conftest import Lab

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tenant-foo.yaml"


HEALTHY = [*(f"gpu-{i:02d}" for i in range(1, 14)), "gpu-16"]


def contract(lab: Lab, **capacity_fields: Any) -> TenantContract:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["cluster"] = lab.target.model_dump()
    data["capacity"].update(capacity_fields)
    return TenantContract.model_validate(data)


def run(fn: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(fn, arg)


def preflight(c: TenantContract) -> StepResult:
    result: StepResult = run(capacity.preflight, StepInput(contract=c, run_id=f"tenant/{c.slug}"))
    return result


def errors(result: StepResult) -> list[str]:
    return [f.message for f in result.findings if not f.ok]


def reserve(lab: Lab, c: TenantContract) -> tuple[StepInput, list[EnsureResult]]:
    pre = preflight(c)
    assert errors(pre) == []
    inp = StepInput(contract=c, facts=pre.facts, run_id=f"tenant/{c.slug}")
    created = run(capacity.reservation, inp).results
    run(capacity.wait_reservation, inp)
    return inp, created


KUBE_STEPS = (kube.namespace, kube.quota, kube.binding, kube.network_policy, kube.rbac)


def reservation_status(lab: Lab, name: str, phase: str) -> dict[str, Any]:
    """The Reservation's status once the operator has set ``phase`` (it reconciles asynchronously)."""
    deadline = time.monotonic() + 10
    while True:
        status: dict[str, Any] = lab.store.get("scheduling.example.io", "reservations", name).get("status") or {}
        if status.get("phase") == phase or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def kubectl(lab: Lab, *args: str) -> str:
    kubeconfig = os.environ["TENANTFLOW_KUBECONFIG"]  # the worker's registry, set by the lab fixture
    env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBECACHEDIR": str(Path(kubeconfig).parent)}
    return subprocess.run(
        ["kubectl", "--context", lab.target.context, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=30,
    ).stdout
