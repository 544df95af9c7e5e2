"""Typed undo data: the untagged JSON of recorded histories decodes to the right model and encodes back unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import to_jsonable_python

from tenantflow.models.results import (
    AuthentikGroup,
    AuthentikUser,
    CordonState,
    EnsureResult,
    Kept,
    KubeBefore,
    LabelledNodes,
    NoUndoData,
    Outcome,
    PresetChoice,
    PresetRelease,
    PvcSize,
    Restored,
    SlurmObject,
    SlurmPartition,
    TokenRef,
    UndoRecord,
    WekaDirectory,
    WekaObject,
    WekaQuota,
)

RECORDED: list[tuple[dict[str, Any], type[UndoRecord]]] = [
    ({}, NoUndoData),
    ({"before": {"metadata": {"labels": {"a": None}}, "spec": {"hard": {"cpu": "2"}}}}, KubeBefore),
    ({"labelled": ["gpu-01", "gpu-02"]}, LabelledNodes),
    ({"cordoned": True}, CordonState),
    ({"preset": "exact"}, PresetChoice),
    ({"released": True}, PresetRelease),
    ({"group_pk": "g-1", "pk": 7}, AuthentikUser),
    (
        {"group_pk": "g-1", "previous": {"email": "a@x", "is_active": False}, "added_to_group": True, "pk": 7},
        AuthentikUser,
    ),
    ({"pk": "g-1", "gid": 5001}, AuthentikGroup),
    ({"pk": "g-1", "gid": 5001, "previous": {"parents": [], "attributes": {"tenant_slug": "t"}}}, AuthentikGroup),
    ({"restored": ["email"], "left_group": True}, Restored),
    ({"restored": []}, Restored),
    ({"kept": "still has 2 members"}, Kept),
    ({"values": {"Fairshare": "10"}, "cluster": "c", "account": ""}, SlurmObject),
    ({"values": {"MaxJobs": "10"}, "cluster": "c", "account": "t-team", "previous": {"MaxJobs": "5"}}, SlurmObject),
    ({"cluster": "c", "account": "t-team"}, SlurmObject),
    ({"line": "PartitionName=t Nodes=gpu-01", "previous": None, "nodes": "gpu-01"}, SlurmPartition),
    ({"filesystem_uid": "fs", "inode_id": 12, "path": "/alice"}, WekaQuota),
    ({"previous": {"hard": 10, "soft": 8}, "filesystem_uid": "fs", "inode_id": 12, "path": "/alice"}, WekaQuota),
    ({"filesystem": "t-home", "path": "/alice"}, WekaDirectory),
    ({"filesystem": "t-home", "path": "/alice", "owner": {"uid": 10001, "gid": 6000, "mode": "700"}}, WekaDirectory),
    (
        {
            "filesystem": "t-scratch",
            "path": "/t",
            "previous": {"uid": 0, "gid": 5000, "mode": "2770"},
            "owner": {"uid": 0, "gid": 6000, "mode": "2770"},
        },
        WekaDirectory,
    ),
    ({"uid": "org-1"}, WekaObject),
    ({"token_uid": "tok-1"}, TokenRef),
    ({"previous_size": "10Gi"}, PvcSize),
]


@pytest.mark.parametrize(("data", "model"), RECORDED, ids=[m.__name__ + str(i) for i, (_, m) in enumerate(RECORDED)])
def test_recorded_json_decodes_to_its_model_and_encodes_back_byte_for_byte(
    data: dict[str, Any], model: type[UndoRecord]
) -> None:
    recorded = {"layer": "l", "kind": "K", "name": "n", "namespace": None, "outcome": "updated", "data": data}
    result = EnsureResult.model_validate_json(json.dumps(recorded))
    assert type(result.data) is model
    assert json.dumps(to_jsonable_python(result)) == json.dumps(recorded)


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="extra"):
        EnsureResult.model_validate(
            {"layer": "l", "kind": "K", "name": "n", "outcome": "created", "data": {"pk": "x", "gid": 1, "bogus": 2}}
        )


def test_data_as_gives_an_empty_model_for_a_planned_creation_and_refuses_another_kind() -> None:
    planned = EnsureResult(layer="identity", kind="User", name="alice", outcome=Outcome.created)
    assert planned.data_as(AuthentikUser) == AuthentikUser()
    cordon = EnsureResult(
        layer="hub", kind="WorkerCluster", name="w", outcome=Outcome.updated, data=CordonState(cordoned=True)
    )
    assert cordon.data_as(CordonState).cordoned
    with pytest.raises(TypeError, match="CordonState, not KubeBefore"):
        cordon.data_as(KubeBefore)
