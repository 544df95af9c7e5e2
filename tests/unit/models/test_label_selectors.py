"""Label selectors as Kubernetes documents them, and a contract's NetworkPolicy written back as given.

Semantics from https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#resource-selectors and
the ``LabelSelector`` API reference: every ``matchLabels`` pair and every ``matchExpressions`` requirement must
hold (ANDed); ``In`` needs the key with one of the values, ``NotIn`` holds when the key is absent or has none of
them, ``Exists``/``DoesNotExist`` look at the key only; the empty selector selects everything.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tenantflow.models.network_policy import LabelSelector, NetworkPolicy

LABELS = {"app": "login", "tier": "front"}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ({}, True),
        ({"matchLabels": {"app": "login"}}, True),
        ({"matchLabels": {"app": "login", "tier": "front"}}, True),
        ({"matchLabels": {"app": "login", "tier": "back"}}, False),
        ({"matchLabels": {"zone": "a"}}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "login"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["login"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"app": "login"},
                "matchExpressions": [
                    {"key": "tier", "operator": "Exists"},
                    {"key": "tier", "operator": "NotIn", "values": ["front"]},
                ],
            },
            False,
        ),
    ],
)
def test_a_selector_selects_as_kubernetes_does(selector: dict[str, Any], selected: bool) -> None:
    assert LabelSelector.model_validate(selector).matches(LABELS) is selected


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"a/b/c": "x"}},
        {"matchLabels": {"Example.com/app": "x"}},
        {"matchLabels": {"/app": "x"}},
        {"matchLabels": {"app": "-x"}},
        {"matchLabels": {"app": "x" * 64}},
        {"matchLabels": {"a" * 64: "x"}},
    ],
)
def test_label_keys_and_values_outside_kubernetes_syntax_are_refused(selector: dict[str, Any]) -> None:
    """Found by the mutation run: a key with an empty prefix (``/app``), which the apiserver's
    ``IsQualifiedName`` refuses ("prefix part must be non-empty"), was taken."""
    with pytest.raises(ValidationError, match="not a Kubernetes label"):
        LabelSelector.model_validate(selector)


def test_label_keys_and_values_kubernetes_takes_are_kept() -> None:
    selector = {"matchLabels": {"example.com/app": "x" * 63, "a" * 63: "", "k8s-app": "a.b_c-d"}}
    assert LabelSelector.model_validate(selector).match_labels == selector["matchLabels"]


def test_a_contract_policy_is_written_back_with_the_kubernetes_field_names() -> None:
    given = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-dns", "namespace": "tenant-foo", "labels": {"x": "y"}},
        "spec": {
            "podSelector": {"matchLabels": {"app": "login"}},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                    "ports": [{"port": 53, "endPort": 54, "protocol": "UDP"}],
                }
            ],
        },
    }
    assert NetworkPolicy.model_validate(given).manifest() == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-dns", "namespace": "tenant-foo"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "login"}, "matchExpressions": []},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                    "ports": [{"protocol": "UDP", "port": 53, "endPort": 54}],
                }
            ],
        },
    }
