"""The partition backends against the lab's Slurm operators and the real slurmctld (issue 23 item 3).

``include`` is the ConfigMap the lab's ConfigMap operator renders into the file slurm.conf includes;
``slinky`` is the ``extraConf`` of Slinky's ``Controller`` (served from the upstream CRD), which the lab's Slinky
stand-in renders into slurm.conf and applies with one ``scontrol reconfigure`` of its reconfigure sidecar. The
slurmctld pod's exec handler remembers every command, whoever ran it: that is what counts reconfigures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm import steps as slurm
from tenantflow.lab.controllers import slinky as lab_slinky
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.models.results import EnsureResult, Outcome
from tests.activities.slurm.conftest import SLURMD_NODES, SlurmLab, make_contract, step_input
from tests.activities.slurm.test_partition_reconfigure import reconfigures

NAMESPACE = "slurm-control"


def extra_conf(lab: SlurmLab) -> str:
    controller = lab.store.get(lab_slinky.GROUP, lab_slinky.RESOURCE, lab_slinky.CONTROLLER, NAMESPACE)
    return str((controller.get("spec") or {}).get("extraConf") or "")


def configmap_keys(lab: SlurmLab) -> set[str]:
    try:
        return set(lab.store.get("", "configmaps", "slurm-partitions", NAMESPACE).get("data") or {})
    except ApiError:
        return set()


def worker_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """Set the worker's settings ``env`` (the settings are read once per process: the cache is cleared)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.cache_clear()


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    yield
    settings.cache_clear()


@pytest.fixture
def slinky(lab: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmLab]:
    """The lab playing Slinky (its own setting) with the Controller its Helm release makes, and the worker set to
    the slinky backend."""
    monkeypatch.setattr(lab.ctx, "slurm_operator", "slinky")
    monkeypatch.setattr(lab.ctx, "volume_sync_s", 1.0)
    worker_env(monkeypatch, SLURM_PARTITION_BACKEND="slinky", SLURM_SLINKY_CONTROLLER=lab_slinky.CONTROLLER)
    before = reconfigures(lab)
    lab.store.create(
        {
            "apiVersion": f"{lab_slinky.GROUP}/v1beta1",
            "kind": "Controller",
            "metadata": {"name": lab_slinky.CONTROLLER, "namespace": NAMESPACE},
            "spec": {
                "slurmKeyRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
                "jwtHs256KeyRef": {"name": "slurm-auth-jwths256", "key": "jwt_hs256.key"},
                "inplaceReconfigure": True,
                "extraConf": "# the platform's own line\nSchedulerParameters=bf_continue\n",
            },
        },
        NAMESPACE,
    )
    settled(lambda: reconfigures(lab) > before, "the sidecar to apply the platform's extraConf")
    yield lab
    removed = reconfigures(lab)
    lab.store.delete(lab_slinky.GROUP, lab_slinky.RESOURCE, lab_slinky.CONTROLLER, NAMESPACE)
    conf = lab.slurm.slurm_conf
    settled(lambda: lab_slinky.SECTION not in conf.read_text(), f"the extraConf section to leave {conf}")
    # the sidecar reconfigures after it rewrote the file: wait for it here, or the next test's count of the
    # slurmctld pod's commands sees it (an unknown-backend test once counted 150 commands where 149 ran before)
    settled(lambda: reconfigures(lab) > removed, "the sidecar's reconfigure after the extraConf section left")


def settled(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, f"waited 30 s for {what}"
        time.sleep(0.1)


def test_slinky_writes_extra_conf_and_slurmctld_serves_it_after_one_reconfigure(slinky: SlurmLab) -> None:
    lab = slinky
    contract = make_contract(lab.target)
    inp = step_input(contract, nodes=list(SLURMD_NODES))
    before = reconfigures(lab)
    res = slurm.partition(inp)
    try:
        assert f"PartitionName={contract.slug} " in extra_conf(lab)
        assert "SchedulerParameters=bf_continue" in extra_conf(lab), "the platform's own lines stay"
        assert f"{contract.slug}.conf" not in configmap_keys(lab), "the slinky backend does not write the ConfigMap"
        assert "Nodes=gpu-[01-02]" in lab.sh("scontrol", "show", "partition", contract.slug).split()
        assert reconfigures(lab) - before == 1, "Slinky's sidecar reconfigures once; tenantflow does not"
        assert slurm.partition(inp).results[0].outcome == "unchanged"
        assert reconfigures(lab) - before == 1
    finally:
        undone = slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=res.results))
    assert [r.outcome for r in undone] == ["deleted"]
    assert f"PartitionName={contract.slug}" not in extra_conf(lab)
    assert reconfigures(lab) - before == 2
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0


def test_the_plan_names_the_backend_and_what_it_writes(slinky: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> None:
    contract = make_contract(slinky.target)
    inp = step_input(contract)
    step = next(s for s in slurm.plan(inp) if s.kind == "partition")
    assert step.detail["backend"] == "slinky"
    assert step.detail["writes"] == f"Controller {NAMESPACE}/slurm (slinky.slurm.net) spec.extraConf"
    worker_env(monkeypatch, SLURM_PARTITION_BACKEND="include")
    step = next(s for s in slurm.plan(inp) if s.kind == "partition")
    assert (step.detail["backend"], step.detail["writes"]) == (
        "include",
        f"ConfigMap {NAMESPACE}/slurm-partitions key {contract.slug}.conf",
    )


def test_an_unknown_backend_is_refused_before_any_write(lab: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> None:
    worker_env(monkeypatch, SLURM_PARTITION_BACKEND="sunk")
    contract = make_contract(lab.target)
    inp = step_input(contract)
    keys, commands = configmap_keys(lab), len(lab.exec_handler.history)
    with pytest.raises(ApplicationError, match=r"SLURM_PARTITION_BACKEND='sunk' is not a partition backend.*include"):
        slurm.partition(inp)
    assert configmap_keys(lab) == keys
    assert len(lab.exec_handler.history) == commands, "nothing ran in the slurmctld pod"
    finding = next(f for f in slurm.preflight(inp).findings if f.check == "slurm.partition_backend")
    assert not finding.ok and "SLURM_PARTITION_BACKEND" in finding.message


def test_an_offboarding_undo_removes_the_line_through_the_configured_backend(slinky: SlurmLab) -> None:
    """An offboarding undoes what its teardown plan lists: a created partition with no record of the run that
    made it (``workflows/saga.py`` ``with_planned``), so the undo takes the configured backend."""
    lab = slinky
    contract = make_contract(lab.target)
    inp = step_input(contract)
    slurm.partition(inp)
    planned = EnsureResult(
        layer="slurm", kind="partition", name=contract.slug, namespace=NAMESPACE, outcome=Outcome.created
    )
    undone = slurm.undo(slurm.UndoInput(contract=contract, facts=inp.facts, step="partition", results=[planned]))
    assert [r.outcome for r in undone] == [Outcome.deleted]
    assert f"PartitionName={contract.slug}" not in extra_conf(lab)
    assert lab.slurm.run("scontrol", "show", "partition", contract.slug, check=False).returncode != 0
