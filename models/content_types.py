"""The HTTP media types tenantflow sends and the lab serves: one spelling of each, for the product and the lab.

The patch types are Kubernetes' (https://kubernetes.io/docs/reference/using-api/api-concepts/#patch-and-apply).
"""

from __future__ import annotations

JSON = "application/json"
TEXT = "text/plain"
MERGE_PATCH = "application/merge-patch+json"
"""JSON merge patch (RFC 7386): what every patch tenantflow sends uses."""
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
