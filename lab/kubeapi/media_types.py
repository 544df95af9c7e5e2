"""The media types the lab's Kubernetes API server serves, as Kubernetes documents them (never the product's).

"Patch and apply" in the Kubernetes API concepts (kubernetes.io/docs/reference/using-api/api-concepts/) names the
``Content-Type`` of each patch a PATCH request may send; a client that spells one otherwise gets
``415 Unsupported Media Type`` from a real API server, and from the lab's.
"""

from __future__ import annotations

MERGE_PATCH = "application/merge-patch+json"
"""JSON merge patch (RFC 7386)."""
JSON_PATCH = "application/json-patch+json"
"""JSON patch (RFC 6902)."""
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
"""Kubernetes' strategic merge patch (built-in kinds only)."""
APPLY_PATCH = "application/apply-patch+yaml"
"""Server-side apply (YAML, or JSON as YAML's subset)."""
