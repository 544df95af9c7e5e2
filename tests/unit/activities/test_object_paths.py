"""A name or namespace from input never steers a Kubernetes request to another object: the record queries accept
only names Kubernetes and the Hub accept, and :meth:`Kind.path` refuses what the API server refuses as a path
segment (and what would end the path)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeobjects import KINDS
from tenantflow.models.records import RecordsQuery, WorkerRecordQuery
from tenantflow.models.targets import KubeTarget

TRAVERSAL = "x/../../../kube-system/secrets/foo?"


def test_an_object_path_is_one_segment_per_name() -> None:
    secret = KINDS["Secret"]
    assert secret.path("tenantflow-system", "tf-record-a") == "/api/v1/namespaces/tenantflow-system/secrets/tf-record-a"
    assert KINDS["ClusterRole"].path(None, "system:tenantflow") == (
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:tenantflow"
    )
    for namespace, name in (("ns", TRAVERSAL), ("ns", ".."), ("ns", "a%2Fb"), ("ns", "a#b"), ("a/b", "x"), ("..", "x")):
        with pytest.raises(ApplicationError, match="cannot be a Kubernetes object's") as refused:
            secret.path(namespace, name)
        assert refused.value.non_retryable and refused.value.type == "InvalidObjectName"


def test_record_queries_refuse_names_no_cluster_or_hub_would_accept() -> None:
    cluster = KubeTarget(context="worker")
    for field in ("hub_namespace", "worker"):
        fields = {"hub_namespace": "forecasting", "worker": "us", field: TRAVERSAL}
        with pytest.raises(ValidationError, match=field):
            WorkerRecordQuery(records=cluster, **fields)
    with pytest.raises(ValidationError, match="slug"):
        RecordsQuery(records=cluster, slug=TRAVERSAL)
    assert WorkerRecordQuery(records=cluster, hub_namespace="forecasting", worker="us").worker == "us"
