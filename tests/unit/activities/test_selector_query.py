"""A workload's LabelSelector written as the labelSelector query of the Kubernetes API."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeclient import selector_query


def test_match_labels_and_every_expression_operator_are_anded() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["ctl", "db"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "slurm", "operator": "Exists"},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert selector_query(selector) == "a=1,b=2,tier in (ctl,db),env notin (dev),slurm,!canary"
    assert selector_query({}) == ""


def test_an_unknown_operator_is_refused() -> None:
    with pytest.raises(ApplicationError):
        selector_query({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
