"""The CLI reads the worker's configuration file (issue 27): with only ``TENANTFLOW_ENV_FILE`` in the shell, as the
README says, the commands whose records the worker reads (``tenants``, ``offboard``, ``handover``, ``drift``) take
the records' cluster from the kubeconfig the file names, and a file that is not there is a message naming the
setting, not a traceback. ``plan`` needs no service setting at all: the worker plans (a dev server and a worker on
fakes here)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common import clusters
from tenantflow.models.plan import Action, Plan, PlanStep
from tenantflow.models.runbook import APPLY, KUBE, PLAN, PREFLIGHT
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.records import records_target
from tests.starter.conftest import CLI, only_temporal_env
from tests.starter.plan_screen import assert_one_line_per_object
from tests.workflows.contract import EXAMPLES
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A shell without the lab's variables; whatever the env file exports is removed again afterwards."""
    for name in ("TENANTFLOW_KUBECONFIG", "TENANTFLOW_CLUSTERS_FILE", "TENANTFLOW_ENV_FILE"):
        monkeypatch.setenv(name, "-")
        monkeypatch.delenv(name)
    yield monkeypatch


def kubeconfig(path: Path, context: str) -> Path:
    cluster = {"name": context, "cluster": {"server": "https://127.0.0.1:1"}}
    user = {"name": "u", "user": {"token": "t"}}
    ctx = {"name": context, "context": {"cluster": context, "user": "u"}}
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [user], "contexts": [ctx]}
    doc["current-context"] = context
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_env_file_alone_names_the_clusters_records_are_read_from(shell: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", "tenant-cluster")
    env_file = tmp_path / "lab.env"
    env_file.write_text(f"TENANTFLOW_KUBECONFIG={config}\n")
    shell.setenv("TENANTFLOW_ENV_FILE", str(env_file))
    target = records_target(None, "tenant-cluster")
    assert target == KubeTarget(kubeconfig=str(config.resolve()), context="tenant-cluster")
    assert clusters.resolve(KubeTarget(context="tenant-cluster")).kubeconfig == config.resolve()


def test_a_missing_env_file_is_a_message_naming_the_setting(shell: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shell.setenv("TENANTFLOW_ENV_FILE", str(tmp_path / "gone.env"))
    with pytest.raises(ContractError, match=r"TENANTFLOW_ENV_FILE=.*gone\.env: no such file"):
        records_target(None, "tenant-cluster")


def planned(slug: str) -> Plan:
    """The plan of the fakes: one object of its first kind per apply step that writes, in the runbook's order."""
    steps = [
        PlanStep(layer=read.layer, kind=step.kinds[0], name=f"{slug}-{step.short}", action=Action.create)
        for read in PLAN
        for step in APPLY
        if step.layer == read.layer and step.kinds
    ]
    return Plan(title=f"Onboard {slug}", steps=steps)


async def plan_with_only_temporal(api: TenantflowClient) -> tuple[int, str, str]:
    """``tenantflow plan`` of the example contract in a shell with the Temporal settings of ``api`` and no other."""
    proc = await asyncio.create_subprocess_exec(
        CLI,
        "plan",
        str(EXAMPLES / "tenant-foo.yaml"),
        env=only_temporal_env(api) | {"COLUMNS": "160"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_plan_with_only_temporal_settings_prints_the_plan(dev_env: WorkflowEnvironment) -> None:
    """``plan`` runs on the worker (``TenantPlan``): the laptop needs only Temporal access to print the plan."""
    world = FakeWorld()
    async with fake_worker(dev_env, world) as api:
        code, out, err = await plan_with_only_temporal(api)
    assert code == 0, err
    plan = planned("tenant-foo")
    assert_one_line_per_object(out, plan, 160)
    assert f"plan hash {plan.plan_hash}" in out, out
    assert "Nothing was written. Start the run with: tenantflow onboard" in out, out
    assert set(world.calls) == {step.name for step in (*PREFLIGHT, *PLAN)}, world.calls


async def test_a_read_the_worker_cannot_make_names_the_step(dev_env: WorkflowEnvironment) -> None:
    """A read that keeps failing on the worker is one message naming the step and the error, exit 1."""
    async with fake_worker(dev_env, FakeWorld(flaky={KUBE.preflight.name: 100})) as api:
        code, _, err = await plan_with_only_temporal(api)
    assert code == 1, err
    assert "Traceback" not in err, err
    assert err.startswith(f"cannot plan: Unavailable: {KUBE.preflight.name}: injected transient failure"), err
