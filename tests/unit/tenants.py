"""The runbook's example tenant (examples/tenant-foo.yaml) as a contract, with changes for one test."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tenantflow.models.tenant import TenantContract

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tenant-foo.yaml"
CLUSTER = {"context": "tenant-cluster"}


def tenant_data(**changes: Any) -> dict[str, Any]:
    """The example's data with ``cluster`` filled in; a change ``storage__pvc_size="1Ti"`` sets a nested key."""
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    data["cluster"] = dict(CLUSTER)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = copy.deepcopy(value)
    return data


def tenant(**changes: Any) -> TenantContract:
    return TenantContract.model_validate(tenant_data(**changes))
