"""The preset comparison: quantity forms and equal values compare equal; a real difference is named by its path."""

from __future__ import annotations

from tenantflow.activities.workercluster.kueue import spec_diff


def test_quantity_forms_compare_equal() -> None:
    want = {"resources": [{"name": "cpu", "nominalQuota": 10000}, {"name": "memory", "nominalQuota": "10000Gi"}]}
    have = {"resources": [{"name": "cpu", "nominalQuota": "10k"}, {"name": "memory", "nominalQuota": "10000Gi"}]}
    assert spec_diff(want, have) == []
    assert spec_diff({"q": "1Gi"}, {"q": "1024Mi"}) == []


def test_a_difference_is_named_field_by_field() -> None:
    assert spec_diff(
        {"a": {"b": "Any", "c": 64}, "d": [1, 2]}, {"a": {"b": "Never", "c": "64"}, "d": [1, 3], "e": True}
    ) == ["spec.a.b: preset 'Any', found 'Never'", "spec.d[1]: preset 2, found 3", "spec.e: preset None, found True"]


def test_strings_that_are_not_quantities_compare_as_strings() -> None:
    assert spec_diff({"policy": "LowerPriority"}, {"policy": "lowerpriority"}) == [
        "spec.policy: preset 'LowerPriority', found 'lowerpriority'"
    ]
