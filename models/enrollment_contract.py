"""The worker-enrollment contract (``enroll-worker-cluster.md``)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, field_validator, model_validator

from tenantflow.models.base import Strict
from tenantflow.models.targets import KubeTarget

DNS_LABEL = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
PRESETS = ("gke-dws", "default")


class WorkerEnrollment(Strict):
    """Which worker joins which Hub tenant namespace, and how carefully."""

    hub: KubeTarget
    worker: KubeTarget
    tenant_namespace: str = Field(..., pattern=DNS_LABEL, description="the organization's namespace on the Hub")
    worker_name: str = Field(..., pattern=DNS_LABEL, description="unique inside the tenant namespace")
    workload_namespaces: list[str] = Field(
        ...,
        min_length=1,
        max_length=64,
        json_schema_extra={"items": {"type": "string", "pattern": DNS_LABEL}, "uniqueItems": True},  # as _namespaces
    )
    brownfield: bool = Field(False, description="the worker already runs Kueue workloads that must keep running")
    scheduling_preset: str = Field("gke-dws")
    canary_exact_routing: bool = Field(False, description="cordon other pool members while the canary runs")

    @field_validator("workload_namespaces")
    @classmethod
    def _namespaces(cls, values: list[str]) -> list[str]:
        import re

        for index, value in enumerate(values):
            if not re.fullmatch(DNS_LABEL, value):
                raise ValueError(
                    f"workload_namespaces[{index}]={value!r} is not a DNS label (lowercase "
                    "letters, digits, hyphens, max 63)"
                )
        if len(set(values)) != len(values):
            raise ValueError("workload_namespaces lists a namespace twice")
        return values

    @field_validator("scheduling_preset")
    @classmethod
    def _preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"unknown scheduling preset {value!r}; use one of {', '.join(PRESETS)}")
        return value

    @model_validator(mode="after")
    def _targets_differ(self) -> Self:
        if self.hub == self.worker:
            raise ValueError("hub and worker name the same kubeconfig context; the Hub cannot be its own worker")
        return self

    @property
    def worker_identity(self) -> str:
        """The ``trainy.ai/worker-cluster`` label value: ``<len(ns)>-<ns>-<worker>``."""
        return f"{len(self.tenant_namespace)}-{self.tenant_namespace}-{self.worker_name}"
