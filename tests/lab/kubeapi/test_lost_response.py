"""The emulated apiserver under a lost-response fault: the create is committed, the client sees the connection drop
(urllib3 does not retry a POST whose answer never came), and a second create of the same name is an AlreadyExists."""

from __future__ import annotations

import uuid

import httpx
import pytest
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.lab.kubeapi.conftest import Cluster


def test_a_create_whose_answer_is_lost_is_committed(cluster: Cluster) -> None:
    name = f"lost-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(cluster.api())
    rule = {"methods": ["POST"], "path": "^/api/v1/namespaces$", "drop_after_rate": 1.0, "max_fires": 1}
    with httpx.Client(base_url=cluster.url, verify=False, timeout=10) as lab:
        lab.put("/_lab/faults", json={"rules": [rule]}).raise_for_status()
        lab.delete("/_lab/requests").raise_for_status()
        try:
            with pytest.raises(urllib3.exceptions.HTTPError):
                core.create_namespace({"metadata": {"name": name}})
            journal = lab.get("/_lab/requests").json()
        finally:
            lab.delete("/_lab/faults").raise_for_status()
    assert [(e["status"], e["injected"]) for e in journal["requests"]] == [(201, "lost_response")]
    assert core.read_namespace(name).metadata.name == name
    with pytest.raises(ApiException) as again:
        core.create_namespace({"metadata": {"name": name}})
    assert again.value.status == 409 and "AlreadyExists" in str(again.value.body)
