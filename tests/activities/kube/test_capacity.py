"""Capacity activities (Reservation, node choice) against the kube emulator, with the lab's reservation operator."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.capacity import steps as capacity
from tenantflow.lab import seed
from tenantflow.models.onboarding import Facts, StepInput, UndoInput
from tenantflow.models.results import Outcome
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import (
    HEALTHY,
    contract,
    errors,
    kubectl,
    preflight,
    reservation_status,
    reserve,
    run,
)
from tests.labfixture import exported


def test_preflight_picks_healthy_unreserved_nodes(lab: Lab) -> None:
    result = preflight(contract(lab))
    assert errors(result) == []
    assert result.facts.nodes == HEALTHY[:8]
    assert lab.writes() == []


def test_preflight_fails_clearly_when_too_few(lab: Lab) -> None:
    result = preflight(contract(lab, gpus=15 * 8))
    [message] = errors(result)
    assert "need 15 healthy unreserved nodes" in message and "only 14 are available" in message
    assert "1 NotReady, 1 cordoned" in message
    assert result.facts.nodes == []
    assert lab.writes() == []


def test_preflight_unknown_sku_and_explicit_node_problems(lab: Lab) -> None:
    assert "no node has node.kubernetes.io/instance-type=a100-8x" in errors(preflight(contract(lab, sku="a100-8x")))[0]
    nodes = [*HEALTHY[:6], "gpu-14", "gpu-15"]
    messages = errors(preflight(contract(lab, gpus=64, nodes=nodes)))
    assert messages == ["node gpu-14 is NotReady", "node gpu-15 is cordoned (SchedulingDisabled)"]
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-02"]), run_id="x"))
    lab.reset_journal()
    messages = errors(preflight(contract(lab, gpus=64, nodes=HEALTHY[:8])))
    assert messages == ["node gpu-02 is reserved by tenant tenant-bar (Reservation tenant-bar-reservation)"]
    assert lab.writes() == []


def _taint(lab: Lab, node: str, taints: list[dict[str, str]]) -> None:
    lab.store.patch("", "nodes", node, {"spec": {"taints": taints}}, "application/merge-patch+json", None)


def test_a_node_tainted_against_the_tenant_is_refused_naming_the_taint_and_the_fix(lab: Lab) -> None:
    """A listed node with a NoSchedule taint the tenant's pods do not tolerate is refused; the automatic choice
    passes it over; the tenant's own reservation taint and a PreferNoSchedule taint keep nothing off."""
    _taint(lab, "gpu-03", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    _taint(lab, "gpu-04", [{"key": "maintenance", "effect": "NoExecute"}])
    _taint(
        lab,
        "gpu-05",
        [
            {"key": "reserved.tenant", "value": "tenant-foo", "effect": "NoSchedule"},
            {"key": "soft", "effect": "PreferNoSchedule"},
        ],
    )
    lab.reset_journal()
    messages = errors(preflight(contract(lab, gpus=64, nodes=HEALTHY[:8])))
    assert messages == [
        "node gpu-03 has taint nvidia.com/gpu=present:NoSchedule, which the pods of tenant-foo do not tolerate (the "
        "ReservationBinding gives them a toleration of reserved.tenant=tenant-foo only)",
        "node gpu-04 has taint maintenance:NoExecute, which the pods of tenant-foo do not tolerate (the "
        "ReservationBinding gives them a toleration of reserved.tenant=tenant-foo only)",
    ]
    fixes = [f.fix for f in preflight(contract(lab, gpus=64, nodes=HEALTHY[:8])).findings if not f.ok]
    assert fixes[0] == (
        "remove the taint if it is stale (kubectl taint nodes gpu-03 nvidia.com/gpu=present:NoSchedule-), "
        "or choose another node"
    )
    chosen = preflight(contract(lab))
    assert errors(chosen) == []
    assert chosen.facts.nodes == [n for n in HEALTHY if n not in ("gpu-03", "gpu-04")][:8]
    assert lab.writes() == []


def test_reservation_labels_exactly_the_nodes_and_reruns_are_idempotent(lab: Lab) -> None:
    c = contract(lab)
    [planned] = run(capacity.plan, StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8])))
    assert planned.action.value == "create" and planned.detail["nodes"] == HEALTHY[:8]
    inp, created = reserve(lab, c)
    assert [r.outcome for r in created] == [Outcome.created]
    assert [s.action.value for s in run(capacity.plan, inp)] == ["unchanged"]
    assert lab.node_labels() == {n: c.slug for n in HEALTHY[:8]}
    node = lab.store.get("", "nodes", "gpu-01")
    assert {"key": "reserved.tenant", "value": c.slug, "effect": "NoSchedule"} in node["spec"]["taints"]
    res = lab.store.get("scheduling.example.io", "reservations", c.reservation_name)
    assert res["spec"]["evictOnRelease"] is False and res["status"]["phase"] == "Ready"
    lab.reset_journal()
    again = preflight(c)
    assert errors(again) == [] and again.facts.nodes == HEALTHY[:8]
    assert [r.outcome for r in run(capacity.reservation, inp).results] == [Outcome.unchanged]
    run(capacity.wait_reservation, inp)
    assert lab.writes() == []
    undo = UndoInput(contract=c, facts=inp.facts, step="reservation", results=created)
    assert [r.outcome for r in run(capacity.undo, undo)] == [Outcome.deleted]
    assert lab.node_labels() == {}
    assert "taints" not in lab.store.get("", "nodes", "gpu-01")["spec"]
    assert [r.outcome for r in run(capacity.undo, undo)] == [Outcome.absent]


def test_conflict_with_another_tenants_reservation_is_named(lab: Lab) -> None:
    c = contract(lab)
    pre = preflight(c)
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-03"]), run_id="x"))
    inp = StepInput(contract=c, facts=pre.facts, run_id=f"tenant/{c.slug}")
    run(capacity.reservation, inp)
    with pytest.raises(ApplicationError) as err:
        run(capacity.wait_reservation, inp)
    assert err.value.type == "Conflict" and err.value.non_retryable
    assert "node gpu-03 is already in Reservation tenant-bar-reservation of tenant tenant-bar" in str(err.value)
    assert lab.node_labels()["gpu-03"] == "tenant-bar"
    assert errors(preflight(c)) == [
        "node gpu-03 of Reservation tenant-foo-reservation is also held by tenant "
        "tenant-bar (Reservation tenant-bar-reservation)"
    ]


def test_preflight_reports_slug_in_use(lab: Lab) -> None:
    lab.store.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "tenant-foo", "labels": {"tenant": "tenant-other"}},
        }
    )
    assert any(
        "namespace tenant-foo already exists and belongs to tenant-other" in m for m in errors(preflight(contract(lab)))
    )


def test_runbook_kubectl_view_of_the_reservation(lab: Lab) -> None:
    c = contract(lab)
    reserve(lab, c)
    names = kubectl(lab, "get", "nodes", "-l", f"reserved.tenant={c.slug}", "-o", "name").split()
    assert names == [f"node/{n}" for n in HEALTHY[:8]]
    assert kubectl(lab, "get", "reservation", c.reservation_name, "-o", "jsonpath={.status.phase}") == "Ready"


def test_released_nodes_go_to_the_waiting_reservation(lab: Lab) -> None:
    c = contract(lab)
    inp, created = reserve(lab, c)
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-03"]), run_id="x"))
    bar = reservation_status(lab, "tenant-bar-reservation", "Conflict")
    assert bar["phase"] == "Conflict" and bar["conflicts"][0]["node"] == "gpu-03"
    run(capacity.undo, UndoInput(contract=c, facts=inp.facts, step="reservation", results=created))
    bar = reservation_status(lab, "tenant-bar-reservation", "Ready")
    assert bar["phase"] == "Ready" and bar["reservedNodes"] == ["gpu-03"]
    assert lab.node_labels() == {"gpu-03": "tenant-bar"}


def test_a_contract_asking_for_evict_on_release_is_a_plan_warning_not_a_refusal(lab: Lab) -> None:
    c = contract(lab, evict_on_release=True)
    pre = preflight(c)
    assert [f for f in pre.findings if not f.ok and f.severity == "error"] == []
    [warning] = [f for f in pre.findings if f.check == "capacity.evict_on_release"]
    assert warning.severity == "warning" and "kills the tenant's running jobs" in warning.message
    [planned] = run(capacity.plan, StepInput(contract=c, facts=pre.facts))
    assert planned.detail["evictOnRelease"] is True and "drains gracefully" in planned.detail["warning"]
    assert lab.writes() == []


def operator_at(lab: Lab, group: str, version: str) -> None:
    """The lab's Reservation CRD served again under another operator's group and version (the runbook says to
    substitute your own CRDs)."""
    [crd] = [c for c in seed.crds() if c["spec"]["names"]["kind"] == "Reservation"]
    spec = {**crd["spec"], "group": group, "versions": [{**crd["spec"]["versions"][0], "name": version}]}
    lab.store.seed([{**crd, "metadata": {"name": f"reservations.{group}"}, "spec": spec}])


def test_the_reservation_goes_to_the_operator_api_the_worker_configures(lab: Lab) -> None:
    operator_at(lab, "capacity.acme.example", "v1beta1")
    c = contract(lab)
    with exported({"RESERVATION_API_VERSION": "capacity.acme.example/v1beta1"}):
        nodes = preflight(c).facts.nodes
        run(capacity.reservation, StepInput(contract=c, facts=Facts(nodes=nodes), run_id="x"))
    written = lab.store.get("capacity.acme.example", "reservations", c.reservation_name)
    assert written["apiVersion"] == "capacity.acme.example/v1beta1" and written["spec"]["reservedNodes"] == nodes
    assert lab.store.list("scheduling.example.io", "reservations", None) == []


def test_an_operator_api_the_cluster_does_not_serve_is_refused_naming_the_setting(lab: Lab) -> None:
    with exported({"RESERVATION_API_VERSION": "capacity.acme.example/v1"}), pytest.raises(ApplicationError) as err:
        preflight(contract(lab))
    assert "reservations.capacity.acme.example" in err.value.message
    assert "set RESERVATION_API_VERSION to the group/version it serves" in err.value.message
    assert lab.writes() == []


def test_the_plan_names_the_cluster_so_an_approval_binds_it(lab: Lab) -> None:
    """The plan hash covers the steps only: the Reservation's step names the contract's cluster, so an approval of
    an onboarding, change or offboarding is an approval of that cluster."""
    c = contract(lab)
    nodes = preflight(c).facts.nodes
    [step] = run(capacity.plan, StepInput(contract=c, facts=Facts(nodes=nodes), run_id="x"))
    assert step.detail["cluster"] == c.cluster.context == "tenant-cluster"
