"""Ensure reaches the planned object from any drifted one, and its undo data puts the object back exactly.

``kubeensure.ensure`` patches an existing object with the fields it owns (a JSON merge patch) and keeps their
previous values (``before_values``); ``kubeensure.undo`` patches those back. Both patches are applied here with
the lab apiserver's RFC 7386 merge patch (:func:`lab.kubeapi.patching.merge_patch`, written from the RFC,
independently of the product), to objects drawn as drifted copies of every object a drawn contract plans:
values changed, keys dropped or added, empty selectors filled, labels of another owner.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.kubeobjects import RUNBOOK_RESERVATION_API
from tenantflow.activities.kube import steps as kube
from tests.generated.profile import GENERATED
from tests.generated.strategies import Drawn, contract_of, contracts
from tests.memory_cluster import MemoryCluster
from tests.runbook_manifests import OUTPOST_PORTS

SCALARS = st.one_of(st.text("abc019-", min_size=1, max_size=6), st.integers(0, 99), st.booleans())


@st.composite
def drifted(draw: st.DrawFn, value: Any) -> Any:
    """``value`` as someone may have left it, each part of the same type as before (the apiserver's schema holds
    there too): kept, changed, dropped, emptied, or given extra keys; past eight keys a map is kept as it is (a
    Secret of 500 users' keys)."""
    if isinstance(value, dict):
        out = dict(value)
        for key in list(value)[:8]:
            if draw(st.integers(0, 5)) == 0:
                del out[key]
            else:
                out[key] = draw(drifted(value[key]))
        if not value and draw(st.booleans()):
            out["matchLabels"] = {"app": draw(st.text("abc", min_size=1, max_size=3))}
        if draw(st.integers(0, 3)) == 0:
            out[draw(st.sampled_from(["extra", "app", "other"]))] = draw(SCALARS)
        return out
    if isinstance(value, list):
        return draw(st.sampled_from([[], value[::-1], value[:1], value]))
    return draw(st.one_of(st.just(value), SCALARS))


def pruned(value: Any) -> Any:
    """``value`` without empty maps: an undo may leave ``spec: {}`` where there was no ``spec``, which the
    apiserver reads the same."""
    if isinstance(value, dict):
        kept = {key: pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item != {}}
    return value


def objects(drawn: Drawn) -> list[dict[str, Any]]:
    contract = contract_of(drawn)
    return [
        manifests.reservation(contract, ["gpu-01"], RUNBOOK_RESERVATION_API),
        *(obj for group in kube.step_manifests(contract, OUTPOST_PORTS).values() for obj in group),
        manifests.authorized_keys_secret(contract),
    ]


PUBLIC_PAYLOADS = {"Secret"}
"""The one Secret these tests plan is the authorized-keys Secret, whose payload (public keys) may be kept."""


@GENERATED
@given(contracts(), st.data())
def test_ensure_reaches_the_planned_fields_and_undo_restores_what_was_there(drawn: Drawn, data: st.DataObject) -> None:
    slug = drawn.data["slug"]
    for desired in objects(drawn):
        kind, name, namespace = desired["kind"], desired["metadata"]["name"], desired["metadata"].get("namespace")
        want = kubeensure.owned(desired)
        metadata = {**data.draw(drifted(want.get("metadata", {}))), "name": name}
        if data.draw(st.booleans()):
            metadata["labels"] = {**(metadata.get("labels") or {}), **manifests.owner_labels(slug)}
        existing = {
            **data.draw(st.one_of(st.just(want), drifted(want))),
            "kind": kind,
            "metadata": {**metadata, **({"namespace": namespace} if namespace else {})},
        }
        present = data.draw(st.booleans())
        cluster = MemoryCluster(*([existing] if present else []))
        if present and kubeensure.foreign_owner(existing, slug):
            with pytest.raises(ApplicationError, match="belongs to"):
                kubeensure.ensure(cluster, "kube", desired, slug, "tenant/run", public_payload=kind in PUBLIC_PAYLOADS)  # type: ignore[arg-type]
            assert cluster.get(kind, name, namespace) == existing
            continue
        result = kubeensure.ensure(cluster, "kube", desired, slug, "tenant/run", public_payload=kind in PUBLIC_PAYLOADS)  # type: ignore[arg-type]
        ensured = cluster.get(kind, name, namespace)
        assert (result.layer, result.kind, result.name, result.namespace) == ("kube", kind, name, namespace)
        assert kubeensure.matches(want, ensured), f"{kind}: ensure left {existing} as {ensured}"
        assert kubeensure.plan_action(ensured, desired, slug).value == "unchanged"
        labels = existing["metadata"].get("labels") or {}
        ours = labels.get("app.kubernetes.io/managed-by") == "tenantflow" and labels.get("tenantflow.io/tenant") == slug
        expected = (
            "created" if not present else "adopted" if not ours else "unchanged" if ensured == existing else "updated"
        )
        assert result.outcome.value == expected
        stamped = (ensured["metadata"].get("annotations") or {}).get("tenantflow.io/run")
        assert stamped == ("tenant/run" if expected in ("created", "adopted") else existing_run(existing))
        (undone,) = kubeensure.undo(cluster, "kube", [result], slug) or [None]  # type: ignore[arg-type]
        after = cluster.get(kind, name, namespace)
        assert pruned(after) == (pruned(existing) if present else None), f"{kind}: undo of {result.outcome}"
        if expected == "unchanged":
            assert undone is None
        else:
            assert undone is not None and (undone.kind, undone.name, undone.namespace) == (kind, name, namespace)
            back = "deleted" if expected == "created" else "updated" if after != ensured else "unchanged"
            assert undone.outcome.value == back


def existing_run(existing: dict[str, Any]) -> object:
    return (existing["metadata"].get("annotations") or {}).get("tenantflow.io/run")


@GENERATED
@given(contracts(), st.data())
def test_undo_of_an_adopted_secret_keeps_its_payload_out_of_the_undo_data(drawn: Drawn, data: st.DataObject) -> None:
    contract = contract_of(drawn)
    desired = manifests.bind_secret_copy(contract, "ldap-bind-creds", {"password": "bmV3"})
    existing = {
        **desired,
        "data": {"password": "b2xk"},
        "metadata": {**desired["metadata"], "labels": data.draw(drifted({"app": "x"}))},
    }
    cluster = MemoryCluster(existing)
    result = kubeensure.ensure(cluster, "kube", desired, contract.slug, "tenant/run")  # type: ignore[arg-type]
    assert "b2xk" not in result.model_dump_json()
    kubeensure.undo(cluster, "kube", [result], contract.slug)  # type: ignore[arg-type]
    assert pruned(cluster.get("Secret", "ldap-bind-creds", contract.namespace)) == pruned(
        {**existing, "data": desired["data"]}
    )
