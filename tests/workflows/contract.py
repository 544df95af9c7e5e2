"""The example tenant contract, loaded the way the CLI loads it."""

from __future__ import annotations

from pathlib import Path

from tenantflow.models.tenant import TenantContract
from tenantflow.starter.contracts import load_tenant

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_tenant(slug: str = "tenant-foo") -> TenantContract:
    contract = load_tenant(EXAMPLES / "tenant-foo.yaml")
    return contract if slug == contract.slug else contract.model_copy(update={"slug": slug})
