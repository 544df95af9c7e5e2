"""The GPU node SKUs the cluster knows, keyed by the ``node.kubernetes.io/instance-type`` label."""

from __future__ import annotations

from tenantflow.models.base import Strict


class Sku(Strict):
    instance_type: str
    gpus_per_node: int
    gpu_model: str
    tier_busbw_gbps: float
    """Expected NCCL all-reduce bus bandwidth at 4 GB messages for this tier (runbook step 7b)."""


SKUS: dict[str, Sku] = {
    sku.instance_type: sku
    for sku in (
        Sku(instance_type="h100-8x", gpus_per_node=8, gpu_model="H100-80GB", tier_busbw_gbps=190.0),
        Sku(instance_type="h200-8x", gpus_per_node=8, gpu_model="H200-141GB", tier_busbw_gbps=190.0),
        Sku(instance_type="a100-8x", gpus_per_node=8, gpu_model="A100-80GB", tier_busbw_gbps=90.0),
        Sku(instance_type="l40s-4x", gpus_per_node=4, gpu_model="L40S-48GB", tier_busbw_gbps=20.0),
    )
}


def lookup_sku(instance_type: str) -> Sku:
    try:
        return SKUS[instance_type]
    except KeyError:
        known = ", ".join(sorted(SKUS))
        raise ValueError(f"unknown GPU SKU {instance_type!r}; use one of: {known}") from None
