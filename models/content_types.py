"""The HTTP media types tenantflow sends: one spelling of each across the product.

The patch types are Kubernetes' (https://kubernetes.io/docs/reference/using-api/api-concepts/#patch-and-apply).
The lab's API server spells them on its own (``lab/kubeapi/media_types.py``), so a type misspelled here is
refused there as a real API server would refuse it.
"""

from __future__ import annotations

JSON = "application/json"
TEXT = "text/plain"
MERGE_PATCH = "application/merge-patch+json"
"""JSON merge patch (RFC 7386): what every patch tenantflow sends uses."""
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
